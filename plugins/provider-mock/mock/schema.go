package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// schema is the part of JSON Schema the mock fills: types, properties (in
// their declared order), required, items, enum, const, default, $ref into
// $defs/definitions, anyOf/oneOf (first non-null branch), allOf (merged),
// numeric bounds, string lengths and array sizes.
type schema struct {
	typ        string // first non-"null" type, or ""
	props      []prop
	hasProps   bool
	required   []string
	items      *schema
	enum       []json.RawMessage
	constVal   json.RawMessage
	def        json.RawMessage
	ref        string
	anyOf      []*schema
	allOf      []*schema
	format     string
	min, max   *float64
	exMin      bool
	exMax      bool
	minItems   int
	maxItems   int // -1: no bound
	minLength  int
	maxLength  int // -1: no bound
	defs       map[string]*schema
	definition map[string]*schema
}

type prop struct {
	name string
	s    *schema
}

type orderedProps []prop

// UnmarshalJSON keeps the properties in the order the schema lists them.
func (o *orderedProps) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("properties must be an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		s := new(schema)
		if err := dec.Decode(s); err != nil {
			return err
		}
		*o = append(*o, prop{name: key, s: s})
	}
	_, err = dec.Token()
	return err
}

// UnmarshalJSON reads a schema leniently: fields of an unexpected shape are
// ignored rather than rejected.
func (s *schema) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*s = schema{maxItems: -1, maxLength: -1}
	if len(b) == 0 || b[0] != '{' {
		return nil // true/false/null schemas: anything goes
	}
	var aux struct {
		Type             json.RawMessage    `json:"type"`
		Properties       orderedProps       `json:"properties"`
		Required         json.RawMessage    `json:"required"`
		Items            json.RawMessage    `json:"items"`
		Enum             []json.RawMessage  `json:"enum"`
		Const            json.RawMessage    `json:"const"`
		Default          json.RawMessage    `json:"default"`
		Ref              string             `json:"$ref"`
		AnyOf            []*schema          `json:"anyOf"`
		OneOf            []*schema          `json:"oneOf"`
		AllOf            []*schema          `json:"allOf"`
		Format           json.RawMessage    `json:"format"`
		Minimum          json.RawMessage    `json:"minimum"`
		Maximum          json.RawMessage    `json:"maximum"`
		ExclusiveMinimum json.RawMessage    `json:"exclusiveMinimum"`
		ExclusiveMaximum json.RawMessage    `json:"exclusiveMaximum"`
		MinItems         json.RawMessage    `json:"minItems"`
		MaxItems         json.RawMessage    `json:"maxItems"`
		MinLength        json.RawMessage    `json:"minLength"`
		MaxLength        json.RawMessage    `json:"maxLength"`
		Defs             map[string]*schema `json:"$defs"`
		Definitions      map[string]*schema `json:"definitions"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	s.typ = firstType(aux.Type)
	s.props, s.hasProps = aux.Properties, aux.Properties != nil
	_ = json.Unmarshal(aux.Required, &s.required)
	if it := bytes.TrimSpace(aux.Items); len(it) > 0 {
		if it[0] == '[' {
			var tuple []*schema
			if json.Unmarshal(it, &tuple) == nil && len(tuple) > 0 {
				s.items = tuple[0]
			}
		} else if it[0] == '{' {
			s.items = new(schema)
			if err := json.Unmarshal(it, s.items); err != nil {
				return err
			}
		}
	}
	s.enum = aux.Enum
	s.constVal = nonNull(aux.Const)
	s.def = nonNull(aux.Default)
	s.ref = aux.Ref
	s.anyOf = append(aux.AnyOf, aux.OneOf...)
	s.allOf = aux.AllOf
	_ = json.Unmarshal(aux.Format, &s.format)
	s.min, s.max = number(aux.Minimum), number(aux.Maximum)
	if v := number(aux.ExclusiveMinimum); v != nil {
		s.min, s.exMin = v, true
	} else if string(bytes.TrimSpace(aux.ExclusiveMinimum)) == "true" {
		s.exMin = true
	}
	if v := number(aux.ExclusiveMaximum); v != nil {
		s.max, s.exMax = v, true
	} else if string(bytes.TrimSpace(aux.ExclusiveMaximum)) == "true" {
		s.exMax = true
	}
	if v := number(aux.MinItems); v != nil {
		s.minItems = int(*v)
	}
	if v := number(aux.MaxItems); v != nil {
		s.maxItems = int(*v)
	}
	if v := number(aux.MinLength); v != nil {
		s.minLength = int(*v)
	}
	if v := number(aux.MaxLength); v != nil {
		s.maxLength = int(*v)
	}
	s.defs, s.definition = aux.Defs, aux.Definitions
	return nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func number(raw json.RawMessage) *float64 {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && !isASCIIDigit(raw[0])) {
		return nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	return &f
}

func firstType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var t string
		_ = json.Unmarshal(raw, &t)
		return t
	}
	var ts []string
	_ = json.Unmarshal(raw, &ts)
	for _, t := range ts {
		if t != "null" {
			return t
		}
	}
	if len(ts) > 0 {
		return "null"
	}
	return ""
}

func (s *schema) isRequired(name string) bool {
	for _, r := range s.required {
		if r == name {
			return true
		}
	}
	return false
}

// hasProp reports whether s describes the property name.
func (s *schema) hasProp(name string) bool {
	for _, p := range s.props {
		if p.name == name {
			return true
		}
	}
	return false
}

// kind is the type the generator produces for s.
func (s *schema) kind() string {
	switch {
	case s.typ != "":
		return s.typ
	case s.hasProps:
		return "object"
	case s.items != nil:
		return "array"
	}
	return "string"
}

// resolve follows $ref, picks the first non-null anyOf/oneOf branch and
// merges allOf, up to a small depth.
func resolve(root, s *schema) *schema {
	for hops := 0; s != nil && hops < 16; hops++ {
		switch {
		case s.ref != "":
			s = lookupRef(root, s.ref)
		case len(s.anyOf) > 0 && s.typ == "" && !s.hasProps && s.enum == nil && s.constVal == nil:
			next := s.anyOf[0]
			for _, alt := range s.anyOf {
				if alt != nil && alt.typ != "null" {
					next = alt
					break
				}
			}
			s = next
		case len(s.allOf) > 0:
			m := *s
			m.allOf = nil
			for _, part := range s.allOf {
				part = resolve(root, part)
				if part == nil {
					continue
				}
				if m.typ == "" {
					m.typ = part.typ
				}
				m.props = append(m.props[:len(m.props):len(m.props)], part.props...)
				m.hasProps = m.hasProps || part.hasProps
				m.required = append(m.required[:len(m.required):len(m.required)], part.required...)
				if m.items == nil {
					m.items = part.items
				}
				if m.enum == nil {
					m.enum = part.enum
				}
			}
			s = &m
		default:
			return s
		}
	}
	return s
}

func lookupRef(root *schema, ref string) *schema {
	if root == nil {
		return nil
	}
	if ref == "#" {
		return root
	}
	for _, p := range [...]struct {
		prefix string
		m      map[string]*schema
	}{{"#/$defs/", root.defs}, {"#/definitions/", root.definition}} {
		if name, ok := strings.CutPrefix(ref, p.prefix); ok {
			return p.m[name]
		}
	}
	return nil
}
