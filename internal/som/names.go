package som

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxName bounds an accessible name: past it a name stops naming.
const maxName = 200

// labelledBy returns the text of the elements aria-labelledby points to.
func (c *compiler) labelledBy(n *html.Node) string {
	ids := strings.Fields(attr(n, "aria-labelledby"))
	if len(ids) == 0 {
		return ""
	}
	var parts []string
	for i, id := range ids {
		if i == 4 {
			break
		}
		if t, ok := c.sc.byID[id]; ok && t != n {
			parts = append(parts, clean(textOf(t, 400)))
		}
	}
	return clean(strings.Join(parts, " "))
}

// controlName is the accessible name of a form control, in accname-lite
// order: aria-label, aria-labelledby, label[for], a wrapping label,
// placeholder, title, then a short text just before it in the same region
// (the implicit label of "Username: [____]" layouts).
func (c *compiler) controlName(n *html.Node, region int) string {
	if l := clean(attr(n, "aria-label")); l != "" {
		return clip(l, maxName)
	}
	if l := c.labelledBy(n); l != "" {
		return clip(l, maxName)
	}
	if id := attr(n, "id"); id != "" {
		if lab, ok := c.sc.labelFor[id]; ok {
			if l := clean(textOf(lab, 400)); l != "" {
				return clip(l, maxName)
			}
		}
	}
	for p, i := n.Parent, 0; p != nil && i < 8; p, i = p.Parent, i+1 {
		if p.DataAtom == atom.Label {
			if l := clean(textOf(p, 400)); l != "" {
				return clip(l, maxName)
			}
			break
		}
		if p.DataAtom == atom.Form || p.DataAtom == atom.Body {
			break
		}
	}
	if l := clean(attr(n, "placeholder")); l != "" {
		return clip(l, maxName)
	}
	if l := clean(attr(n, "title")); l != "" {
		return clip(l, maxName)
	}
	if c.lastReg == region && c.lastText != "" {
		return c.lastText
	}
	return ""
}

// buttonName is a button's accessible name: aria-label, aria-labelledby,
// then its content (or value, or an image's alt), then title.
func (c *compiler) buttonName(n *html.Node) string {
	if l := clean(attr(n, "aria-label")); l != "" {
		return clip(l, maxName)
	}
	if l := c.labelledBy(n); l != "" {
		return clip(l, maxName)
	}
	if n.DataAtom == atom.Input {
		t := strings.ToLower(attr(n, "type"))
		if v, ok := attrOK(n, "value"); ok && clean(v) != "" {
			return clip(clean(v), maxName)
		}
		switch t {
		case "image":
			return clip(firstNonEmpty(clean(attr(n, "alt")), clean(attr(n, "title")), "Submit"), maxName)
		case "reset":
			return "Reset"
		case "submit", "":
			return "Submit"
		}
		return clip(clean(attr(n, "title")), maxName)
	}
	if t := clean(textOf(n, 600)); t != "" {
		return clip(t, maxName)
	}
	return clip(firstNonEmpty(altText(n), clean(attr(n, "title")), clean(attr(n, "value"))), maxName)
}

// linkName is a link's accessible name: aria-label, aria-labelledby, its
// text, an image's alt, title.
func (c *compiler) linkName(n *html.Node) string {
	if l := clean(attr(n, "aria-label")); l != "" {
		return clip(l, maxName)
	}
	if l := c.labelledBy(n); l != "" {
		return clip(l, maxName)
	}
	if t := clean(textOf(n, 600)); t != "" {
		return clip(t, maxName)
	}
	return clip(firstNonEmpty(altText(n), clean(attr(n, "title"))), maxName)
}
