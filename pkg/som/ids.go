package som

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// hashID returns prefix + n base32 characters of sha256(parts joined by
// U+241F, the unit separator's symbol, which keys never contain).
func hashID(prefix string, n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\u241f")))
	return prefix + b32.EncodeToString(h[:])[:n]
}

// identityKey is what makes an element itself, per kind, built only from
// fields the Element keeps, so a stored snapshot can be re-keyed:
//
//	link      name | href key
//	button    name | type | field | anchor heading
//	controls  type | field, else label
//	radio     field | value
//	heading   level | text
//	text      anchor heading | first 8 words
//	price     anchor heading | source | currency sign
//	image     alt
//
// Names go through keyName, so digits do not count.
func identityKey(e *Element) string {
	switch e.Kind {
	case KindLink:
		return keyName(e.Name) + "|" + hrefKey(e.Href)
	case KindButton:
		return keyName(e.Name) + "|" + e.Type + "|" + keyName(e.Field) + "|" + keyName(e.Anchor)
	case KindInput, KindTextArea, KindSelect, KindCheckbox, KindHidden:
		id := e.Field
		if id == "" {
			id = "~" + keyName(e.Name)
		}
		return e.Type + "|" + id
	case KindRadio:
		return keyName(e.Field) + "|" + keyName(e.Value)
	case KindHeading:
		return strconv.Itoa(e.Level) + "|" + keyName(e.Text)
	case KindText:
		return keyName(e.Anchor) + "|" + firstWords(keyName(e.Text), 8)
	case KindPrice:
		return keyName(e.Anchor) + "|" + e.Source + "|" + currencySign(e.Text)
	case KindImage:
		return keyName(e.Name)
	}
	return keyName(e.Name)
}

// currencySign keeps only what is not a digit, separator or space: the
// currency of a written price, not its amount.
func currencySign(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r == '.', r == ',', r == ' ', r == '\u00a0', r == '-':
		default:
			b.WriteRune(r)
		}
	}
	return keyName(b.String())
}

// mintIDs gives every region and element its stateless id. A region's key
// counts earlier regions with the same key; an element's key counts earlier
// elements of the same kind and key in the same region: local occurrence
// indexes, so that nothing outside that scope can move an id. A hash that
// collides is re-hashed with a salt, in document order.
func (c *compiler) mintIDs() {
	seen := map[string]bool{"r_body": true}
	occ := map[string]int{}
	for i, r := range c.regions {
		if i == 0 {
			continue
		}
		k := r.key
		r.key = k + "|" + strconv.Itoa(occ[k])
		occ[k]++
		r.ID = mint(seen, "r_"+r.Role.short()+"_", 6, r.key)
		r.Parent = c.regions[r.parent].ID
	}
	clear(occ)
	for _, e := range c.elems {
		e.key = identityKey(&e.Element)
		scope := c.regions[e.region].key
		k := scope + "\u241f" + string(e.Kind) + "\u241f" + e.key
		n := occ[k]
		occ[k]++
		e.ID = mint(seen, "e_", 8, scope, string(e.Kind), e.key, strconv.Itoa(n))
	}
}

// mint hashes parts to an id not yet in seen, and records it.
func mint(seen map[string]bool, prefix string, n int, parts ...string) string {
	id := hashID(prefix, n, parts...)
	for salt := 2; seen[id]; salt++ {
		id = hashID(prefix, n, append(parts, "#"+strconv.Itoa(salt))...)
	}
	seen[id] = true
	return id
}
