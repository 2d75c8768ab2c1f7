// Package redact masks personal data and secrets in text svc stores, for
// tenants that turn the redaction setting on. It masks, in this order:
//
//   - secrets that look like API keys: sk-…, svc_…, ghp_…/gho_…/github_pat_…,
//     xox[abpr]-…, AKIA…/ASIA… (AWS access key ids), AIza… (Google API keys),
//     and "Bearer <token>" → [secret]
//   - email addresses → [email]
//   - payment card numbers: 13 to 19 digits, spaces or dashes between groups,
//     that pass the Luhn check → [card]
//   - IPv4 addresses and IPv6 addresses (at least three groups) → [ip]
//   - phone numbers: an optional +country code and 7 to 15 digits with the
//     usual separators → [phone]
//
// In a JSON document only the text of strings is masked, so the document
// stays valid JSON with its shape.
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

var (
	secretRe = regexp.MustCompile(`\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}|svc_[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9\-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[A-Za-z0-9_\-]{35})\b|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*`)
	emailRe  = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	cardRe   = regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`)
	ipv4Re   = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)
	ipv6Re   = regexp.MustCompile(`(?i)(?:[0-9a-f]{1,4})?(?::{1,2}[0-9a-f]{1,4}){2,7}(?:::)?`)
	phoneRe  = regexp.MustCompile(`(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]?\d{2,4}){1,4}`)
)

// The masks.
const (
	Secret = "[secret]"
	Email  = "[email]"
	Card   = "[card]"
	IP     = "[ip]"
	Phone  = "[phone]"
)

// String masks s. Masking one class can leave text another class then
// matches (digits around a masked phone number), so it repeats until
// nothing changes.
func String(s string) string {
	for range 4 {
		masked := mask(s)
		if masked == s {
			break
		}
		s = masked
	}
	return s
}

func mask(s string) string {
	s = secretRe.ReplaceAllString(s, Secret)
	s = emailRe.ReplaceAllString(s, Email)
	s = cardRe.ReplaceAllStringFunc(s, func(m string) string {
		if luhn(m) {
			return Card
		}
		return m
	})
	s = ipv4Re.ReplaceAllStringFunc(s, func(m string) string {
		if _, err := netip.ParseAddr(m); err == nil {
			return IP
		}
		return m
	})
	s = ipv6Re.ReplaceAllStringFunc(s, func(m string) string {
		if a, err := netip.ParseAddr(m); err == nil && a.Is6() {
			return IP
		}
		return m
	})
	return phoneRe.ReplaceAllStringFunc(s, func(m string) string {
		if looksLikePhone(m) {
			return Phone
		}
		return m
	})
}

// Bytes masks b. A JSON document has the text of its strings masked, its
// shape kept; anything else is masked as text. nil stays nil.
func Bytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	if out, err := maskJSON(b); err == nil {
		return out
	}
	return []byte(String(string(b)))
}

// maskJSON rewrites a JSON document token by token, masking strings (keys
// included) and keeping everything else, order included, as it was.
func maskJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var (
		out   = make([]byte, 0, len(b))
		stack []byte // open containers: '{' or '['
		count []int  // values written in each
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			out = append(out, byte(d))
			stack, count = stack[:len(stack)-1], count[:len(count)-1]
			continue
		}
		if n := len(stack); n > 0 {
			// In an object, even positions are keys and odd ones values.
			switch {
			case stack[n-1] == '{' && count[n-1]%2 == 1:
				out = append(out, ':')
			case count[n-1] > 0:
				out = append(out, ',')
			}
			count[n-1]++
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, byte(v))
			stack, count = append(stack, byte(v)), append(count, 0)
		case string:
			enc, _ := json.Marshal(String(v))
			out = append(out, enc...)
		case json.Number:
			out = append(out, v...)
		case bool:
			out = strconv.AppendBool(out, v)
		case nil:
			out = append(out, "null"...)
		}
	}
	if len(stack) != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return out, nil
}

// looksLikePhone keeps dates, amounts and bare numbers apart from phone
// numbers: 7 to 15 digits, written with a country code (+) or with at
// least two separators or an area code in parentheses, and not a date.
func looksLikePhone(m string) bool {
	n := digits(m)
	if n < 7 || n > 15 || dateRe.MatchString(m) {
		return false
	}
	separators := strings.Count(m, " ") + strings.Count(m, "-") + strings.Count(m, ".")
	return strings.HasPrefix(m, "+") || strings.Contains(m, "(") || separators >= 2
}

var dateRe = regexp.MustCompile(`^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$`)

func digits(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	s = strings.NewReplacer(" ", "", "-", "").Replace(s)
	if len(s) < 13 || len(s) > 19 {
		return false
	}
	sum := 0
	for i := range len(s) {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
