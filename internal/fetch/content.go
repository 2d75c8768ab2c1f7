package fetch

import (
	"mime"
	"strings"
)

// htmlTypes are the media types compiled into a SOM. XML in general and
// plain text are not: the compiler is an HTML parser, and a JSON or image
// answer compiled as HTML would give an agent a meaningless page.
var htmlTypes = map[string]bool{
	"text/html":             true,
	"application/xhtml+xml": true,
}

// isHTML reports whether a Content-Type value names an HTML document.
func isHTML(ctype string) bool {
	return htmlTypes[mediaType(ctype)]
}

// mediaType returns the lowercase media type of a Content-Type value, or
// "an unknown type" when it does not parse.
func mediaType(ctype string) string {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		// Lenient for "text/html;" style values that servers send.
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ctype, ";", 2)[0]))
		if mt == "" || !strings.Contains(mt, "/") {
			return "an unknown type"
		}
	}
	return mt
}
