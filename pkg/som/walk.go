package som

import (
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxRunBytes bounds the text one block contributes.
const maxRunBytes = 8000

// walkRoot extracts regions and elements from the whole document.
func (c *compiler) walkRoot(root *html.Node) {
	body := &region{key: "body", parent: -1}
	body.ID, body.Role = "r_body", RoleBody
	c.regions = append(c.regions, body)
	if p := c.sc.facts.s.Price; p != nil {
		// Structured data names the price outright; it leads the page.
		c.add(&elem{Element: Element{Kind: KindPrice, Price: p, Source: c.sc.facts.source,
			Text: priceText(p), Name: c.sc.facts.s.Name}, region: 0, form: -1})
	}
	c.walk(root, 0, -1, 0)
	c.flush()
	c.linkForms()
	c.nameBySubmitters()
	c.meta.Structured = c.sc.facts.result()
}

func (c *compiler) walk(n *html.Node, reg, form, depth int) {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.node(ch, reg, form, depth+1)
	}
}

func (c *compiler) node(n *html.Node, reg, form, depth int) {
	switch n.Type {
	case html.TextNode:
		c.text(n.Data, n.Parent, reg)
		return
	case html.DocumentNode:
		c.walk(n, reg, form, depth)
		return
	case html.ElementNode:
	default:
		return
	}
	if c.full {
		c.trunc.Dropped++
		return
	}
	if depth > c.lim.MaxDepth {
		c.truncate("depth", 1)
		return
	}
	if c.nodes++; c.nodes > c.lim.MaxNodes {
		c.full = true
		c.truncate("nodes", 1)
		return
	}
	if invisible(n) {
		return
	}
	if role, label, inferred, ok := c.landmark(n, reg); ok {
		c.flush()
		r := c.openRegion(n, reg, role, label, inferred)
		f := form
		if role == RoleForm {
			f = r
		}
		c.walk(n, r, f, depth)
		c.flush()
		return
	}
	if isPriceHolder(n) && !hasInteractive(n) && c.price(n, reg) {
		return
	}
	if lvl := headingLevel(n); lvl > 0 {
		c.flush()
		c.run.level, c.run.region, c.run.node = lvl, reg, n
		c.walk(n, reg, form, depth)
		c.flush()
		c.run.level = 0
		return
	}
	role := strings.ToLower(firstField(attr(n, "role")))
	a := n.DataAtom
	switch {
	case (a == atom.A || a == atom.Area) && hasAttr(n, "href"), role == "link":
		c.link(n, reg, form)
		return
	case isButton(n, role):
		c.flush()
		c.button(n, reg, form)
		return
	case a == atom.Input:
		c.input(n, reg, form)
		return
	case a == atom.Select || role == "listbox" || role == "combobox":
		c.flush()
		c.selectEl(n, reg, form)
		return
	case a == atom.Textarea || role == "textbox" || role == "searchbox":
		c.flush()
		c.textarea(n, reg, form)
		return
	case role == "checkbox" || role == "radio":
		c.flush()
		k := KindCheckbox
		if role == "radio" {
			k = KindRadio
		}
		// Named as an input checkbox is: its markup, then its own text
		// (where an input's label follows it), then what precedes it.
		name := firstNonEmpty(c.ownName(n), clip(clean(textOf(n, 400)), maxName))
		if name == "" {
			name = c.controlName(n, reg)
		}
		c.add(&elem{Element: Element{Kind: k, Name: name, Checked: attr(n, "aria-checked") == "true"},
			node: n, region: reg, form: -1})
		return
	case a == atom.Img:
		if alt := clip(clean(attr(n, "alt")), maxName); alt != "" {
			c.add(&elem{Element: Element{Kind: KindImage, Name: alt}, node: n, region: reg, form: -1})
		}
		return
	case a == atom.Br:
		c.text(" ", n, reg)
		return
	case a == atom.Label && c.namesAControl(n):
		// Its text is the control's name already; as text too it would
		// only say it twice.
		c.flush()
		c.muted++
		c.walk(n, reg, form, depth)
		c.muted--
		c.flush()
		return
	}
	if inline[a] {
		c.walk(n, reg, form, depth)
		return
	}
	c.flush()
	c.walk(n, reg, form, depth)
	c.flush()
}

// namesAControl reports whether a label names a form control: the one its
// for attribute points to, or one inside it.
func (c *compiler) namesAControl(label *html.Node) bool {
	if id := attr(label, "for"); id != "" {
		if t, ok := c.sc.byID[id]; ok && isFormControl(t) {
			return true
		}
	}
	found := false
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil && !found; ch = ch.NextSibling {
			if isFormControl(ch) {
				found = true
				return
			}
			visit(ch)
		}
	}
	visit(label)
	return found
}

func isFormControl(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Select, atom.Textarea:
		return true
	case atom.Input:
		return !strings.EqualFold(attr(n, "type"), "hidden")
	}
	return false
}

// text adds page text to the open run.
func (c *compiler) text(s string, at *html.Node, reg int) {
	if c.muted > 0 {
		return
	}
	r := &c.run
	if r.region != reg {
		c.flush()
		r.region = reg
	}
	if r.node == nil {
		r.node = at
	}
	if r.bytes >= maxRunBytes {
		return
	}
	if len(s) > maxRunBytes-r.bytes {
		s = s[:maxRunBytes-r.bytes]
	}
	r.bytes += len(s)
	if k := len(r.segs) - 1; k >= 0 && r.segs[k].ref < 0 {
		r.segs[k].text += s
		return
	}
	r.segs = append(r.segs, seg{text: s, ref: -1})
}

// ref adds an inline element (a link, a price) to the open run.
func (c *compiler) ref(i, reg int) {
	if i < 0 {
		return
	}
	r := &c.run
	if r.region != reg {
		c.flush()
		r.region = reg
	}
	if r.node == nil {
		r.node = c.elems[i].node.Parent
	}
	r.segs = append(r.segs, seg{ref: i})
}

// flush ends the open run: a heading, a text block when it has text of its
// own (a run of bare links is a list of links, not text), or nothing.
func (c *compiler) flush() {
	r := &c.run
	defer func() { r.segs, r.bytes, r.node = r.segs[:0], 0, nil }()
	if len(r.segs) == 0 || r.region < 0 {
		return
	}
	var all, own strings.Builder
	for _, s := range r.segs {
		if s.ref < 0 {
			all.WriteString(s.text)
			own.WriteString(s.text)
			continue
		}
		all.WriteByte(' ')
		all.WriteString(c.elems[s.ref].label())
		all.WriteByte(' ')
	}
	text := clean(all.String())
	if text == "" {
		return
	}
	segs := append([]seg(nil), r.segs...)
	if r.level > 0 {
		i := c.add(&elem{Element: Element{Kind: KindHeading, Text: clip(text, 1000), Level: r.level}, node: r.node, region: r.region, form: -1, segs: segs})
		c.claim(segs, i)
		c.regions[r.region].anchor = clip(text, 200)
		return
	}
	if !meaningful(own.String()) {
		return
	}
	i := c.add(&elem{Element: Element{Kind: KindText, Text: clip(text, 4000), Anchor: c.regions[r.region].anchor},
		node: r.node, region: r.region, form: -1, segs: segs})
	c.claim(segs, i)
	if i >= 0 && len(text) <= 60 {
		// A short text may label the control after it; a price does not,
		// and a label before the price is no longer next to the control.
		c.lastText, c.lastReg = strings.TrimRight(text, " :*"), r.region
		if parsePrice(text) != nil {
			c.lastText = ""
		}
	}
}

// claim marks the inline elements of a flushed run as rendered by it.
func (c *compiler) claim(segs []seg, i int) {
	if i < 0 {
		return
	}
	for _, s := range segs {
		if s.ref >= 0 {
			c.elems[s.ref].inText = i
		}
	}
}

// meaningful reports whether s has a letter or a digit.
func meaningful(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f && !isSpaceRune(r) {
			return true
		}
	}
	return false
}

func isSpaceRune(r rune) bool {
	return r == '\u00a0' || r == '\u200b' || r == '\u2003' || r == '\u2002'
}

// label is how an inline element reads inside text.
func (e *elem) label() string {
	if e.Kind == KindPrice && e.Price != nil {
		return e.Text
	}
	return e.Name
}

// headingLevel returns 1–6 for h1–h6 and role=heading (aria-level, default
// 2), 0 otherwise.
func headingLevel(n *html.Node) int {
	switch n.DataAtom {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	if strings.EqualFold(firstField(attr(n, "role")), "heading") {
		if l, err := strconv.Atoi(strings.TrimSpace(attr(n, "aria-level"))); err == nil && l >= 1 && l <= 6 {
			return l
		}
		return 2
	}
	return 0
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := attrOK(n, key)
	return ok
}

// isButton reports whether n acts as a button.
func isButton(n *html.Node, role string) bool {
	switch n.DataAtom {
	case atom.Button:
		return true
	case atom.Input:
		switch strings.ToLower(strings.TrimSpace(attr(n, "type"))) {
		case "submit", "button", "reset", "image":
			return true
		}
		return false
	}
	switch role {
	case "button", "tab", "menuitem", "switch", "option", "menuitemcheckbox", "menuitemradio":
		return true
	}
	return false
}

// isPriceHolder reports whether n declares a price (itemprop=price) or is
// named like one (a class or id containing "price").
func isPriceHolder(n *html.Node) bool {
	if ip := attr(n, "itemprop"); ip != "" && (hasWord(ip, "price") || hasWord(ip, "lowPrice")) {
		return true
	}
	return strings.Contains(strings.ToLower(attr(n, "class")), "price") || strings.Contains(strings.ToLower(attr(n, "id")), "price")
}

func priceText(p *Price) string {
	if p.Currency != "" {
		return p.Currency + " " + p.Amount
	}
	return p.Amount
}

// hasInteractive reports whether n holds a link, a control or a form: such
// an element is a container to walk, never a price to take whole.
func hasInteractive(n *html.Node) bool {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != html.ElementNode {
			continue
		}
		switch ch.DataAtom {
		case atom.A, atom.Form, atom.Input, atom.Button, atom.Select, atom.Textarea:
			return true
		}
		if hasInteractive(ch) {
			return true
		}
	}
	return false
}
