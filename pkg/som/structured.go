package som

import (
	"encoding/json"
	"fmt"
	"strings"
)

// productFacts gathers structured product data. Each source fills only
// what an earlier one left empty, in the order JSON-LD, microdata, Open
// Graph, so the most explicit declaration wins.
type productFacts struct {
	s      Structured
	source string // of the price
}

func (f *productFacts) setPrice(amount, currency, source string) {
	if f.s.Price != nil {
		return
	}
	a, ok := structuredAmount(amount)
	if !ok {
		return
	}
	f.s.Price = &Price{Amount: a, Currency: currencyCode(currency)}
	f.source = source
}

func (f *productFacts) fill(dst *string, v string) {
	if *dst == "" {
		*dst = clip(clean(v), 200)
	}
}

// result returns the facts, nil when there are none.
func (f *productFacts) result() *Structured {
	s := f.s
	if s.Price == nil && s.Name == "" && s.Brand == "" && s.SKU == "" && s.Availability == "" && len(s.Types) == 0 {
		return nil
	}
	return &s
}

// maxLDNodes bounds the objects walked per JSON-LD block, so a hostile
// block cannot cost more than its size.
const maxLDNodes = 5000

// jsonLD reads one application/ld+json block: a Product or Offer object,
// an array of them, or an @graph. Invalid JSON is skipped; pages ship it.
func (f *productFacts) jsonLD(src string) {
	var v any
	d := json.NewDecoder(strings.NewReader(src))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return
	}
	budget := maxLDNodes
	f.ldWalk(v, "", 0, &budget)
}

func (f *productFacts) ldWalk(v any, parentType string, depth int, budget *int) {
	*budget--
	if *budget < 0 || depth > 32 {
		return
	}
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			f.ldWalk(x, parentType, depth+1, budget)
		}
	case map[string]any:
		typ := ldTypes(t["@type"])
		for _, ty := range typ {
			f.addType(ty)
		}
		isProduct := hasType(typ, "Product", "ProductGroup", "Vehicle", "IndividualProduct", "ProductModel")
		isOffer := hasType(typ, "Offer", "AggregateOffer")
		if isProduct {
			f.fill(&f.s.Name, ldString(t["name"]))
			f.fill(&f.s.Brand, ldString(t["brand"]))
			f.fill(&f.s.SKU, ldString(t["sku"]))
		}
		if isOffer || (isProduct && t["price"] != nil) {
			price := ldString(t["price"])
			if price == "" {
				price = ldString(t["lowPrice"])
			}
			cur := ldString(t["priceCurrency"])
			if price == "" {
				if ps, ok := t["priceSpecification"].(map[string]any); ok {
					price, cur = ldString(ps["price"]), firstNonEmpty(cur, ldString(ps["priceCurrency"]))
				}
			}
			f.setPrice(price, cur, "jsonld")
			f.fill(&f.s.Availability, availability(ldString(t["availability"])))
		}
		// Walk in a fixed order: map order is random, output must not be.
		for _, k := range []string{"@graph", "mainEntity", "mainEntityOfPage", "itemListElement", "item", "offers", "hasVariant"} {
			if x, ok := t[k]; ok {
				f.ldWalk(x, strings.Join(typ, ","), depth+1, budget)
			}
		}
	}
}

func (f *productFacts) addType(t string) {
	t = clip(clean(t), 40)
	if t == "" || len(f.s.Types) >= 8 {
		return
	}
	for _, x := range f.s.Types {
		if x == t {
			return
		}
	}
	f.s.Types = append(f.s.Types, t)
}

// ldTypes reads @type, a string or an array of strings, without the
// schema.org prefix.
func ldTypes(v any) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "http://schema.org/"), "https://schema.org/")
		out = append(out, strings.TrimPrefix(s, "schema:"))
	}
	switch t := v.(type) {
	case string:
		add(t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				add(s)
			}
		}
	}
	return out
}

func hasType(types []string, want ...string) bool {
	for _, t := range types {
		for _, w := range want {
			if strings.EqualFold(t, w) {
				return true
			}
		}
	}
	return false
}

// ldString reads a scalar, or an object's name, or an array's first item.
func ldString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return fmt.Sprint(t)
	case map[string]any:
		if n, ok := t["name"]; ok {
			return ldString(n)
		}
		if n, ok := t["@id"]; ok {
			return ldString(n)
		}
	case []any:
		if len(t) > 0 {
			return ldString(t[0])
		}
	}
	return ""
}

// availability keeps the schema.org term: "InStock", "OutOfStock".
func availability(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
