package som

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxOptions bounds the options kept per select.
const maxOptions = 500

// link adds a link. A link inside running text stays inline; one that
// wraps blocks (a card) stands on its own.
func (c *compiler) link(n *html.Node, reg, form int) {
	href := resolve(c.base, attr(n, "href"))
	e := &elem{Element: Element{Kind: KindLink, Name: c.linkName(n), Href: href}, node: n, region: reg, form: -1}
	if href == "javascript:" {
		e.Href, e.JS = "", true
	}
	if e.Name == "" && e.Href == "" {
		return
	}
	if hasBlock(n) {
		c.flush()
		c.add(e)
		return
	}
	c.ref(c.add(e), reg)
}

// hasBlock reports whether n holds a block element.
func hasBlock(n *html.Node) bool {
	found := false
	var visit func(n *html.Node, depth int)
	visit = func(n *html.Node, depth int) {
		for ch := n.FirstChild; ch != nil && !found && depth < 8; ch = ch.NextSibling {
			if ch.Type == html.ElementNode {
				if !inline[ch.DataAtom] && !skipped[ch.DataAtom] && ch.Namespace == "" {
					found = true
					return
				}
				visit(ch, depth+1)
			}
		}
	}
	visit(n, 0)
	return found
}

func (c *compiler) button(n *html.Node, reg, form int) {
	e := &elem{Element: Element{Kind: KindButton, Name: c.buttonName(n), Field: attr(n, "name"),
		Disabled: hasAttr(n, "disabled"), Anchor: c.regions[reg].anchor}, node: n, region: reg, form: form,
		formAttr: attr(n, "form")}
	switch n.DataAtom {
	case atom.Button:
		e.Type = strings.ToLower(strings.TrimSpace(attr(n, "type")))
		if e.Type != "button" && e.Type != "reset" {
			e.Type = "submit" // the missing and the invalid value default to submit
		}
		e.Value = attr(n, "value")
	case atom.Input:
		e.Type = strings.ToLower(strings.TrimSpace(attr(n, "type")))
		e.Value = attr(n, "value")
	default:
		e.form = -1 // role=button is not a submitter
	}
	c.add(e)
}

func (c *compiler) input(n *html.Node, reg, form int) {
	t := strings.ToLower(strings.TrimSpace(attr(n, "type")))
	if t == "" {
		t = "text"
	}
	e := &elem{Element: Element{Field: attr(n, "name"), Required: hasAttr(n, "required"), Disabled: hasAttr(n, "disabled")},
		node: n, region: reg, form: form, formAttr: attr(n, "form")}
	switch t {
	case "hidden":
		e.Kind = KindHidden
		c.add(e)
		return
	case "checkbox", "radio":
		c.flush()
		e.Kind = KindCheckbox
		if t == "radio" {
			e.Kind = KindRadio
		}
		e.Checked = hasAttr(n, "checked")
		e.Value = attr(n, "value")
		if e.Value == "" {
			e.Value = "on"
		}
		// Their label usually follows them; what comes before names
		// the group.
		e.Name = firstNonEmpty(c.ownName(n), followingText(n))
		if e.Name == "" {
			e.Name = c.controlName(n, reg)
		}
	default:
		c.flush()
		e.Kind, e.Type = KindInput, t
		if t != "password" && t != "file" {
			e.Value = clip(attr(n, "value"), 2000)
		}
		e.Name = c.labelName(n, reg)
		if e.Name == "" && e.Value != "" && strings.Contains(attr(n, "onfocus"), "value") {
			// A value a script clears on focus is a placeholder from before
			// browsers had one: it names the field and is not its value.
			e.Name, e.Value = clip(clean(e.Value), maxName), ""
		}
		if e.Name == "" {
			e.Name = layoutLabel(n)
		}
	}
	c.add(e)
}

// followingText returns the short text right after n: "[x] Remember me".
func followingText(n *html.Node) string {
	var b strings.Builder
	for s := n.NextSibling; s != nil && b.Len() < 120; s = s.NextSibling {
		if s.Type == html.TextNode {
			b.WriteString(s.Data)
			continue
		}
		if s.Type != html.ElementNode || !inline[s.DataAtom] || s.DataAtom == atom.Input || s.DataAtom == atom.Br {
			break
		}
		b.WriteString(textOf(s, 120))
	}
	t := clean(b.String())
	if len(t) > 80 {
		return ""
	}
	return t
}

func (c *compiler) selectEl(n *html.Node, reg, form int) {
	e := &elem{Element: Element{Kind: KindSelect, Field: attr(n, "name"), Required: hasAttr(n, "required"),
		Disabled: hasAttr(n, "disabled"), Multiple: hasAttr(n, "multiple")},
		node: n, region: reg, form: form, formAttr: attr(n, "form")}
	e.Name = c.controlName(n, reg)
	var visit func(n *html.Node, depth int)
	visit = func(n *html.Node, depth int) {
		for ch := n.FirstChild; ch != nil && depth < 4; ch = ch.NextSibling {
			if ch.Type != html.ElementNode {
				continue
			}
			if ch.DataAtom == atom.Option || strings.EqualFold(attr(ch, "role"), "option") {
				if len(e.Options) == maxOptions {
					c.truncate("elements", 1)
					return
				}
				text := clip(clean(textOf(ch, 400)), maxName)
				v, ok := attrOK(ch, "value")
				if !ok {
					v = text
				}
				e.Options = append(e.Options, Option{Value: v, Label: firstNonEmpty(clean(attr(ch, "label")), text),
					Selected: hasAttr(ch, "selected") || attr(ch, "aria-selected") == "true"})
				continue
			}
			visit(ch, depth+1)
		}
	}
	visit(n, 0)
	for _, o := range e.Options {
		if o.Selected {
			e.Value = o.Value
			break
		}
	}
	if e.Name == "" && len(e.Options) > 0 && e.Options[0].Value == "" {
		e.Name = e.Options[0].Label // "Choose a country": the empty first option is the prompt
	}
	if e.Value == "" && !e.Multiple && len(e.Options) > 0 && n.DataAtom == atom.Select {
		e.Value = e.Options[0].Value // a single select shows its first option
	}
	c.add(e)
}

func (c *compiler) textarea(n *html.Node, reg, form int) {
	e := &elem{Element: Element{Kind: KindTextArea, Field: attr(n, "name"), Required: hasAttr(n, "required"),
		Disabled: hasAttr(n, "disabled")}, node: n, region: reg, form: form, formAttr: attr(n, "form")}
	if n.DataAtom != atom.Textarea {
		e.Kind, e.Type = KindInput, "text"
	} else {
		e.Value = clip(strings.TrimSpace(textOf(n, 4000)), 2000)
	}
	e.Name = c.controlName(n, reg)
	c.add(e)
}

// price adds a price found in the page's text, when n's text is short and
// holds a currency amount. It reports whether it did.
func (c *compiler) price(n *html.Node, reg int) bool {
	txt := clean(textOf(n, 300))
	if txt == "" || len(txt) > 80 {
		return false
	}
	p := parsePrice(txt)
	src := "text"
	if ip := attr(n, "itemprop"); hasWord(ip, "price") || hasWord(ip, "lowPrice") {
		src = "microdata"
		if v, ok := attrOK(n, "content"); ok {
			if a, ok := structuredAmount(v); ok {
				cur := ""
				if p != nil {
					cur = p.Currency
				}
				p = &Price{Amount: a, Currency: cur, Raw: txt}
			}
		}
	}
	if p == nil {
		return false
	}
	p.Raw = ""
	i := c.add(&elem{Element: Element{Kind: KindPrice, Text: txt, Price: p, Source: src, Anchor: c.regions[reg].anchor},
		node: n, region: reg, form: -1})
	c.ref(i, reg)
	return true
}

// linkForms gives each control its form: the enclosing one, or the one its
// form attribute names.
func (c *compiler) linkForms() {
	byID := map[string]int{}
	for i, r := range c.regions {
		if r.Form != nil {
			if id := attr(r.node, "id"); id != "" {
				if _, ok := byID[id]; !ok {
					byID[id] = i
				}
			}
		}
	}
	for _, e := range c.elems {
		if e.formAttr == "" {
			continue
		}
		if i, ok := byID[e.formAttr]; ok {
			e.form = i
		} else {
			e.form = -1 // a form attribute naming no form detaches the control
		}
	}
}
