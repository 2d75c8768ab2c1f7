package som

import (
	"slices"
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

// controlName is the accessible name of a form control: its own
// (ownName); else what the layout says: a short text just before it in the
// same region (the implicit label of "Username: [____]" layouts), or the
// term or header cell before it (layoutLabel). The one text field of a
// form left unnamed is named later by the form's one submit button
// (nameBySubmitters).
func (c *compiler) controlName(n *html.Node, region int) string {
	if l := c.labelName(n, region); l != "" {
		return l
	}
	return layoutLabel(n)
}

// labelName is the control's own name or else its implicit label.
func (c *compiler) labelName(n *html.Node, region int) string {
	if l := c.ownName(n); l != "" {
		return l
	}
	if c.lastReg == region {
		return c.lastText
	}
	return ""
}

// ownName is the name a control's markup gives it, in accname-lite order:
// aria-label, aria-labelledby, label[for], a wrapping label, placeholder,
// title.
func (c *compiler) ownName(n *html.Node) string {
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
	return clip(clean(attr(n, "title")), maxName)
}

// layoutLabel is the label a layout gives a control: the term of the
// description it sits in (<dt>Quantity:</dt><dd>[__]</dd>), or the cell
// before its cell when that is a header cell or ends with a colon
// (<th>Username</th><td>[__]</td>, <td>Email:</td><td>[__]</td>), as long
// as that term or cell is a short text holding no control of its own and
// the control comes first in its own description or cell. A data cell
// without a colon is not taken: in a cart row the cell before the quantity
// box is a price; nor a control after other content: in a product's
// "Color:" row the quantity box follows a swatch and a price.
func layoutLabel(n *html.Node) string {
	for p, i := n.Parent, 0; p != nil && i < 6; p, i = p.Parent, i+1 {
		switch p.DataAtom {
		case atom.Dd, atom.Td:
			prev := previousElement(p)
			if prev == nil || holdsControl(prev) || !leads(p, n) {
				return ""
			}
			raw := clean(textOf(prev, 200))
			switch {
			case p.DataAtom == atom.Dd && prev.DataAtom == atom.Dt:
			case p.DataAtom == atom.Td && prev.DataAtom == atom.Th:
			case p.DataAtom == atom.Td && prev.DataAtom == atom.Td && strings.HasSuffix(raw, ":"):
			default:
				return ""
			}
			if l := strings.TrimRight(raw, " :*"); len(l) <= 60 {
				return l
			}
			return ""
		case atom.Dl, atom.Table, atom.Body:
			return ""
		}
	}
	return ""
}

// leads reports whether nothing a person sees comes before n in cell: no
// text, link, image or other control (a hidden input is not seen). One walk in document order up to n:
// what it passes is all before n.
func leads(cell, n *html.Node) bool {
	lead, done := true, false
	var visit func(m *html.Node)
	visit = func(m *html.Node) {
		for ch := m.FirstChild; ch != nil && !done; ch = ch.NextSibling {
			switch {
			case ch == n:
				done = true
			case ch.Type == html.TextNode:
				if strings.TrimSpace(ch.Data) != "" {
					lead, done = false, true
				}
			case ch.Type != html.ElementNode || invisible(ch):
			case ch.DataAtom == atom.A || ch.DataAtom == atom.Img || ch.DataAtom == atom.Button || isFormControl(ch):
				lead, done = false, true
			default:
				visit(ch)
			}
		}
	}
	visit(cell)
	return lead && done
}

// previousElement is n's previous sibling element.
func previousElement(n *html.Node) *html.Node {
	for s := n.PrevSibling; s != nil; s = s.PrevSibling {
		if s.Type == html.ElementNode {
			return s
		}
	}
	return nil
}

// holdsControl reports whether n is or contains a form control or button.
func holdsControl(n *html.Node) bool {
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Input, atom.Select, atom.Textarea, atom.Button:
			return true
		}
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if holdsControl(ch) {
			return true
		}
	}
	return false
}

// nameBySubmitters names the one text field of a form by the form's one
// submit button, when the field has no other name and the button says more
// than "Submit": a search box beside its "Search" button, an email box
// beside "Subscribe". It runs once every control has its form (a form
// attribute ties a control to a form it may not sit in) and before ids,
// which names feed, are minted. On a page cut short nothing is named this
// way: a form's other fields may be among what was dropped.
func (c *compiler) nameBySubmitters() {
	if c.full || slices.Contains(c.trunc.Reasons, "depth") || slices.Contains(c.trunc.Reasons, "input") {
		return
	}
	type tally struct {
		fields, submitters int
		field, submitter   *elem
	}
	forms := map[int]*tally{}
	for _, e := range c.elems {
		if e.form < 0 {
			continue
		}
		field := e.Kind == KindInput && textLike(e.Type) || e.Kind == KindTextArea || e.Kind == KindSelect
		submitter := e.Kind == KindButton && (e.Type == "submit" || e.Type == "image")
		if !field && !submitter {
			continue
		}
		t := forms[e.form]
		if t == nil {
			t = &tally{}
			forms[e.form] = t
		}
		if field {
			t.fields++
			t.field = e
		} else {
			t.submitters++
			t.submitter = e
		}
	}
	for _, t := range forms {
		if t.fields == 1 && t.submitters == 1 && t.field.Kind == KindInput && t.field.Name == "" &&
			!strings.EqualFold(t.submitter.Name, "submit") {
			t.field.Name = t.submitter.Name
		}
	}
}

// textLike reports whether an input of type t (lower case) takes typed
// text.
func textLike(t string) bool {
	switch t {
	case "text", "search", "email", "tel", "url", "number":
		return true
	}
	return false
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
