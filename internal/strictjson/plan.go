package strictjson

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// planKind is how a plan reads an object or an array.
type planKind uint8

const (
	freeKind   planKind = iota // any keys; values free too
	structKind                 // keys must be fields
	mapKind                    // any keys; values follow elem
	listKind                   // elements follow elem
)

// plan is what Check expects of a JSON value read into one Go type.
type plan struct {
	kind planKind
	// fields are a struct's fields by JSON name, and names the same names
	// in order, for the case-insensitive search.
	fields map[string]*plan
	names  []string
	// elem is a map's values or a slice's or array's elements.
	elem *plan
}

// free is the plan of a value read as anything: json.RawMessage, any, a
// type with its own UnmarshalJSON, a scalar.
var free = &plan{}

var (
	plans   sync.Map // reflect.Type → *plan
	buildMu sync.Mutex
)

// planOf returns t's plan, built on first use.
func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	built := map[reflect.Type]*plan{}
	p := build(t, built)
	for t, p := range built {
		plans.Store(t, p)
	}
	return p
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// build makes t's plan; built holds the plans made so far, so that a
// recursive type refers to its own plan.
func build(t reflect.Type, built map[reflect.Type]*plan) *plan {
	if p, ok := built[t]; ok {
		return p
	}
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		built[t] = free
		return free
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := build(t.Elem(), built)
		built[t] = p
		return p
	case reflect.Struct:
		p := &plan{kind: structKind, fields: map[string]*plan{}}
		built[t] = p
		for _, f := range fieldsOf(t) {
			p.fields[f.name] = build(f.typ, built)
			p.names = append(p.names, f.name)
		}
		return p
	case reflect.Map:
		p := &plan{kind: mapKind}
		built[t] = p
		p.elem = build(t.Elem(), built)
		return p
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			built[t] = free // []byte is a base64 string
			return free
		}
		p := &plan{kind: listKind}
		built[t] = p
		p.elem = build(t.Elem(), built)
		return p
	}
	built[t] = free
	return free
}

// field is a struct field as encoding/json sees it.
type field struct {
	name   string
	typ    reflect.Type
	depth  int // of embedding
	tagged bool
}

// fieldsOf lists the fields encoding/json decodes into for struct type t:
// exported fields under their json tag's name or their own, "-" left out,
// the fields of an embedded struct without a name promoted, and of fields
// with one name the shallowest kept (the tagged one among equals), none
// when that is ambiguous. It follows encoding/json's typeFields.
func fieldsOf(t reflect.Type) []field {
	var all []field
	type level struct {
		typ   reflect.Type
		depth int
	}
	next := []level{{t, 0}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, l.depth + 1})
					continue
				}
				f := field{name: name, typ: sf.Type, depth: l.depth, tagged: name != ""}
				if f.name == "" {
					f.name = sf.Name
				}
				all = append(all, f)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b field) int {
		if c := cmp.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(a.depth, b.depth); c != 0 {
			return c
		}
		switch {
		case a.tagged && !b.tagged:
			return -1
		case b.tagged && !a.tagged:
			return 1
		}
		return 0
	})
	var out []field
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		group := all[i:j]
		// The shallowest wins; among equals, the one tagged; else none.
		if len(group) == 1 || group[1].depth > group[0].depth || group[0].tagged && !group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	return out
}

// validTag is encoding/json's rule for a tag name it uses.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
