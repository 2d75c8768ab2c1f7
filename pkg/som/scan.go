package som

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// scanResult is what one pass over the whole tree learns before regions and
// elements are extracted: things referred to by id, and page-level facts
// that may sit anywhere (a <title> in the body, JSON-LD in the footer).
type scanResult struct {
	byID     map[string]*html.Node // first element with each id attribute
	labelFor map[string]*html.Node // first <label for=x> per x
	hasMain  bool                  // a <main> or role=main exists
	facts    productFacts
	micro    microdata
	og       map[string]string
}

// microdata is the first itemprop value of each product property.
type microdata struct {
	price, currency, availability, name, brand, sku string
}

func (c *compiler) scan(root *html.Node) {
	s := &c.sc
	s.byID = map[string]*html.Node{}
	s.labelFor = map[string]*html.Node{}
	s.og = map[string]string{}
	var ld []string
	depth := 0
	var visit func(n *html.Node)
	visit = func(n *html.Node) {
		depth++
		defer func() { depth-- }()
		if depth > c.lim.MaxDepth {
			return
		}
		if n.Type == html.ElementNode {
			c.scanElement(n, &ld)
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			visit(ch)
		}
	}
	visit(root)
	for _, b := range ld {
		s.facts.jsonLD(b)
	}
	m := s.micro
	s.facts.setPrice(m.price, m.currency, "microdata")
	s.facts.fill(&s.facts.s.Availability, availability(m.availability))
	s.facts.fill(&s.facts.s.Name, m.name)
	s.facts.fill(&s.facts.s.Brand, m.brand)
	s.facts.fill(&s.facts.s.SKU, m.sku)
	s.facts.setPrice(firstNonEmpty(s.og["product:price:amount"], s.og["og:price:amount"]),
		firstNonEmpty(s.og["product:price:currency"], s.og["og:price:currency"]), "opengraph")
	s.facts.fill(&s.facts.s.Availability, availability(firstNonEmpty(s.og["product:availability"], s.og["og:availability"])))
	if s.facts.s.Price != nil || s.facts.s.Name != "" {
		s.facts.fill(&s.facts.s.Name, s.og["og:title"])
	}
}

func (c *compiler) scanElement(n *html.Node, ld *[]string) {
	s := &c.sc
	if id := attr(n, "id"); id != "" {
		if _, ok := s.byID[id]; !ok {
			s.byID[id] = n
		}
	}
	if strings.EqualFold(attr(n, "role"), "main") {
		s.hasMain = true
	}
	switch n.DataAtom {
	case atom.Html:
		if c.meta.Lang == "" {
			c.meta.Lang = clip(clean(attr(n, "lang")), 35)
		}
	case atom.Title:
		if c.meta.Title == "" && !inSVG(n) {
			c.meta.Title = clip(clean(textOf(n, 2000)), 300)
		}
	case atom.Base:
		if h := attr(n, "href"); h != "" && !c.baseSet {
			if u, err := url.Parse(strings.TrimSpace(h)); err == nil {
				b := c.page.ResolveReference(u)
				if b.Scheme == "http" || b.Scheme == "https" {
					c.base = b
				}
			}
			c.baseSet = true
		}
	case atom.Link:
		if c.meta.Canonical == "" && hasWord(attr(n, "rel"), "canonical") {
			c.meta.Canonical = resolve(c.page, attr(n, "href"))
		}
	case atom.Label:
		if f := attr(n, "for"); f != "" {
			if _, ok := s.labelFor[f]; !ok {
				s.labelFor[f] = n
			}
		}
	case atom.Main:
		s.hasMain = true
	case atom.Script:
		if t := strings.ToLower(strings.TrimSpace(attr(n, "type"))); strings.HasPrefix(t, "application/ld+json") && len(*ld) < 32 {
			*ld = append(*ld, textOf(n, 1<<20))
		}
	case atom.Meta:
		p := strings.ToLower(firstNonEmpty(attr(n, "property"), attr(n, "name")))
		if strings.HasPrefix(p, "og:") || strings.HasPrefix(p, "product:") {
			if _, ok := s.og[p]; !ok {
				s.og[p] = attr(n, "content")
			}
		}
	}
	if ip := attr(n, "itemprop"); ip != "" {
		m := &s.micro
		v := func() string {
			if x, ok := attrOK(n, "content"); ok {
				return x
			}
			if n.DataAtom == atom.Link || n.DataAtom == atom.A {
				return attr(n, "href")
			}
			return textOf(n, 200)
		}
		for _, p := range strings.Fields(ip) {
			switch p {
			case "price", "lowPrice":
				setOnce(&m.price, v())
			case "priceCurrency":
				setOnce(&m.currency, v())
			case "availability":
				setOnce(&m.availability, v())
			case "sku":
				setOnce(&m.sku, v())
			case "brand":
				if n.FirstChild != nil && attr(n, "itemscope") == "" {
					setOnce(&m.brand, v())
				}
			case "name":
				if isProductScope(n) {
					setOnce(&m.name, v())
				}
			}
		}
	}
}

// isProductScope reports whether n's nearest itemscope is a Product.
func isProductScope(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if _, ok := attrOK(p, "itemscope"); ok {
			return strings.HasSuffix(attr(p, "itemtype"), "/Product")
		}
	}
	return false
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = strings.TrimSpace(v)
	}
}

func inSVG(n *html.Node) bool { return n.Namespace != "" }

// attr returns the value of n's attribute key ("" when absent).
func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val, true
		}
	}
	return "", false
}

func hasWord(list, w string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, w) {
			return true
		}
	}
	return false
}
