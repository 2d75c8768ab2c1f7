package som

import (
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// decode returns the page as UTF-8 and the name of the charset it was read
// in, found as WHATWG says: byte order mark, the Content-Type header, a
// <meta> in the first 1024 bytes. When that finds nothing but the web's
// default, windows-1252, a page that is valid UTF-8 throughout is read as
// UTF-8: the sniffer looks only at the first 1024 bytes, where many UTF-8
// pages are still plain ASCII, and text in windows-1252 that happens to be
// valid UTF-8 is vanishingly rare.
func decode(b []byte, contentType string) ([]byte, string) {
	enc, name, certain := charset.DetermineEncoding(b, contentType)
	if !certain && name == "windows-1252" && utf8.Valid(b) {
		return b, "utf-8"
	}
	if name == "utf-8" {
		return b, name
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		return b, "utf-8"
	}
	return out, name
}
