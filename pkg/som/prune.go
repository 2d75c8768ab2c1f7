package som

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are elements whose content is never page text: code, styling,
// embedded documents and graphics.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Canvas: true, atom.Audio: true, atom.Video: true, atom.Map: true, atom.Datalist: true,
	atom.Link: true, atom.Meta: true,
}

// inline are elements that continue the text around them.
var inline = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true, atom.Br: true,
	atom.Cite: true, atom.Code: true, atom.Data: true, atom.Dfn: true, atom.Em: true, atom.Font: true,
	atom.I: true, atom.Kbd: true, atom.Label: true, atom.Mark: true, atom.Q: true, atom.S: true,
	atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strong: true, atom.Sub: true,
	atom.Sup: true, atom.Time: true, atom.U: true, atom.Var: true, atom.Wbr: true, atom.Del: true,
	atom.Ins: true, atom.Img: true, atom.Nobr: true, atom.Big: true, atom.Tt: true, atom.Strike: true,
	atom.Output: true, atom.Meter: true, atom.Progress: true, atom.Picture: true, atom.Source: true,
}

// invisible reports whether n is not shown to a person: skipped elements,
// the hidden attribute, inline display:none or visibility:hidden, and
// aria-hidden on inline and icon elements. aria-hidden on a block is kept:
// cookie walls put it on the whole page, and honouring it there dropped
// nearly all of one real page.
func invisible(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if skipped[n.DataAtom] || n.Namespace != "" {
		return true
	}
	if _, ok := attrOK(n, "hidden"); ok && n.DataAtom != atom.Input {
		return true
	}
	if st := attr(n, "style"); st != "" && hiddenStyle(st) {
		return true
	}
	if n.DataAtom != atom.Input && inline[n.DataAtom] && strings.EqualFold(strings.TrimSpace(attr(n, "aria-hidden")), "true") {
		return true
	}
	return false
}

// hiddenStyle reports whether an inline style hides the element: display
// none, visibility hidden, or positioned far off screen (the honeypot
// fields spam traps hide from people).
func hiddenStyle(st string) bool {
	st = strings.ToLower(st)
	if !strings.Contains(st, "none") && !strings.Contains(st, "hidden") && !strings.Contains(st, "-") {
		return false
	}
	for _, decl := range strings.Split(st, ";") {
		k, v, ok := strings.Cut(decl, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important"))
		if (k == "display" && v == "none") || (k == "visibility" && v == "hidden") {
			return true
		}
		if (k == "left" || k == "top") && offscreen(v) {
			return true
		}
	}
	return false
}

// textOf returns the visible text under n, at most max bytes of it, with
// whitespace as the page has it (callers clean it).
func textOf(n *html.Node, max int) string {
	var b strings.Builder
	var visit func(n *html.Node, depth int)
	visit = func(n *html.Node, depth int) {
		if b.Len() >= max || depth > 64 {
			return
		}
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Title, atom.Textarea:
				if depth > 0 {
					return
				}
				for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
					if ch.Type == html.TextNode {
						b.WriteString(ch.Data)
					}
				}
				return
			case atom.Br:
				b.WriteByte(' ')
			case atom.Select, atom.Option, atom.Datalist:
				if depth > 0 {
					return
				}
			}
			if depth > 0 && invisible(n) {
				return
			}
			if !inline[n.DataAtom] {
				b.WriteByte(' ')
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			visit(ch, depth+1)
		}
		if n.Type == html.ElementNode && !inline[n.DataAtom] {
			b.WriteByte(' ')
		}
	}
	visit(n, 0)
	s := b.String()
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// altText returns the alt of the first image under n, for links and
// buttons that hold only an image.
func altText(n *html.Node) string {
	var found string
	var visit func(n *html.Node, depth int)
	visit = func(n *html.Node, depth int) {
		if found != "" || depth > 16 {
			return
		}
		if n.Type == html.ElementNode {
			if n.DataAtom == atom.Img || (n.DataAtom == atom.Input && strings.EqualFold(attr(n, "type"), "image")) {
				if a := clean(attr(n, "alt")); a != "" {
					found = a
					return
				}
			}
			if l := clean(attr(n, "aria-label")); l != "" && depth > 0 {
				found = l
				return
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			visit(ch, depth+1)
		}
	}
	visit(n, 0)
	return found
}

// offscreen reports whether a CSS length is -999px or further left or up.
func offscreen(v string) bool {
	v = strings.TrimSpace(strings.TrimSuffix(v, "px"))
	if !strings.HasPrefix(v, "-") {
		return false
	}
	digits := 0
	for _, c := range v[1:] {
		if c < '0' || c > '9' {
			break
		}
		digits++
	}
	return digits >= 4 || v == "-999"
}
