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

// controlName is the accessible name of a form control: its own
// (ownName); else what the layout says: a short text just before it in the
// same region (the implicit label of "Username: [____]" layouts), the term
// or header cell before it (layoutLabel), and for the one text field of a
// form, the form's one submit button ("[____] [Search]").
func (c *compiler) controlName(n *html.Node, region int) string {
	if l := c.labelName(n, region); l != "" {
		return l
	}
	return c.layoutName(n)
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

// layoutName is what the layout around an unlabelled control says of it.
func (c *compiler) layoutName(n *html.Node) string {
	if l := layoutLabel(n); l != "" {
		return l
	}
	return c.submitterName(n)
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
// text, link, image or other control.
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
			case ch.DataAtom == atom.A || ch.DataAtom == atom.Img || holdsControl(ch) && !contains(ch, n):
				lead, done = false, true
			default:
				visit(ch)
			}
		}
	}
	visit(cell)
	return lead && done
}

// contains reports whether n is m or inside it.
func contains(m, n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == m {
			return true
		}
	}
	return false
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

// submitterName names the one text field of a form by the form's one
// submit button, when the button says more than "Submit": a search box
// beside its "Search" button, an email box beside "Subscribe".
func (c *compiler) submitterName(n *html.Node) string {
	if n.DataAtom != atom.Input || !textLike(n) {
		return ""
	}
	form := n.Parent
	for form != nil && form.DataAtom != atom.Form && form.DataAtom != atom.Body {
		form = form.Parent
	}
	if form == nil || form.DataAtom != atom.Form {
		return ""
	}
	// The answer is the form's, whichever of its fields asks.
	if name, ok := c.formFieldNames[form]; ok {
		return name
	}
	if c.formFieldNames == nil {
		c.formFieldNames = map[*html.Node]string{}
	}
	name := c.formFieldName(form)
	c.formFieldNames[form] = name
	return name
}

// formFieldName is the name form's one submit button gives its one text
// field, or "" when it has more or fewer of either.
func (c *compiler) formFieldName(form *html.Node) string {
	var fields, submitters int
	var submitter *html.Node
	budget := 2000 // elements looked at, so a page-wide form costs little
	var visit func(m *html.Node)
	visit = func(m *html.Node) {
		for ch := m.FirstChild; ch != nil && budget > 0; ch = ch.NextSibling {
			budget--
			if ch.Type != html.ElementNode || invisible(ch) {
				continue
			}
			switch {
			case ch.DataAtom == atom.Input && textLike(ch), ch.DataAtom == atom.Textarea, ch.DataAtom == atom.Select:
				fields++
			case isSubmitter(ch):
				submitters++
				submitter = ch
			}
			visit(ch)
		}
	}
	visit(form)
	if fields != 1 || submitters != 1 || budget == 0 {
		return ""
	}
	name := c.buttonName(submitter)
	if strings.EqualFold(name, "submit") {
		return ""
	}
	return name
}

// textLike reports whether input n takes typed text.
func textLike(n *html.Node) bool {
	switch strings.ToLower(strings.TrimSpace(attr(n, "type"))) {
	case "", "text", "search", "email", "tel", "url", "number":
		return true
	}
	return false
}

// isSubmitter reports whether n submits its form.
func isSubmitter(n *html.Node) bool {
	t := strings.ToLower(strings.TrimSpace(attr(n, "type")))
	switch n.DataAtom {
	case atom.Button:
		return t != "button" && t != "reset" // a missing or invalid type submits
	case atom.Input:
		return t == "submit" || t == "image"
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
