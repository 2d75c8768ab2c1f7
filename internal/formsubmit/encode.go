package formsubmit

import (
	"bytes"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// normalizeNewlines turns every lone CR and lone LF into CRLF, as each of
// the three form encodings does to names and string values.
func normalizeNewlines(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "\r\n")
}

// urlencode is the application/x-www-form-urlencoded serializer of the URL
// Standard, over the entries converted to name-value pairs (a file's value
// is its name, which is empty here). It differs from url.QueryEscape, and a
// server may tell: '*' stays as is and '~' is escaped, and the order of the
// entries is kept.
func urlencode(entries []Entry) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('&')
		}
		formEscape(&b, normalizeNewlines(e.Name))
		b.WriteByte('=')
		formEscape(&b, normalizeNewlines(e.Value))
	}
	return b.String()
}

func formEscape(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '*', c == '-', c == '.', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
}

// multipartBody is the multipart/form-data encoding: one part per entry,
// names (and file names) escaped in the header the way browsers do (LF,
// CR and '"' as %0A, %0D and %22, not backslashes as mime/multipart's
// helpers would), and a file entry as an empty application/octet-stream
// part.
func multipartBody(entries []Entry) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	esc := strings.NewReplacer("\n", "%0A", "\r", "%0D", `"`, "%22")
	for _, e := range entries {
		h := textproto.MIMEHeader{}
		disp := `form-data; name="` + esc.Replace(normalizeNewlines(e.Name)) + `"`
		if e.File {
			disp += `; filename="` + esc.Replace(e.Value) + `"`
			h.Set("Content-Type", "application/octet-stream")
		}
		h.Set("Content-Disposition", disp)
		part, _ := w.CreatePart(h) // writes to a bytes.Buffer: cannot fail
		if !e.File {
			part.Write([]byte(normalizeNewlines(e.Value)))
		}
	}
	w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// textPlain is the text/plain encoding: "name=value" lines ended by CRLF,
// nothing escaped. It is ambiguous by design and meant for people to read.
func textPlain(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(normalizeNewlines(e.Name))
		b.WriteByte('=')
		b.WriteString(normalizeNewlines(e.Value))
		b.WriteString("\r\n")
	}
	return b.String()
}
