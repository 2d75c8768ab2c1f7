package mock

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Value generation for json_schema answers, json_object answers and tool-call
// arguments.
//
// Objects get their properties in schema order (all of them for a JSON
// answer; for tool arguments the required ones plus optional ones the text
// gives a value for, or all when nothing is marked required). Arrays get
// one item (or minItems; string arrays named like tags/keywords get the
// text's key words). Enums of strings are treated as labels (the label
// scorer picks one; with no signal, a catch-all value or enum[0]); other
// enums give enum[0]; const and default are used as given. Numbers: 0.9 for
// confidence/score-like names, the first number in the text for
// count/amount-like names, else 1, clamped to minimum/maximum. Booleans are
// true. Strings follow the format (email, uri, date, date-time, time, uuid)
// or the property name:
//
//	email                       first e-mail address in the text, else user@example.com
//	url, link, website          first URL in the text, else https://example.com
//	date, day                   first YYYY-MM-DD in the text, else 2025-01-15
//	label, category, class, intent, topic, department, queue, type, tag
//	                            the chosen label when the prompt lists labels
//	sentiment                   positive / negative / neutral by the label scorer
//	priority, urgency, severity high / medium / low by the label scorer
//	city, location, place, destination, origin, country, region
//	                            the capitalised words after "in/for/at/to/from/near",
//	                            else San Francisco
//	name, full_name, customer_name, ...
//	                            "my name is X" / "I'm X" / "this is X", else Alex Doe
//	phone                       first phone number, else +1-555-0100
//	id, *_id, *_number          first id-like token (#123, ORD-1234, 12345), else mock-<hash>
//	query, q, search, question, prompt, input (and text/message in tool arguments)
//	                            the user text (minus the tool's name and filler verbs)
//	summary, description, reason, explanation, text, content, details, ...
//	                            the text's key words
//	answer, response, reply     the plain mock answer
//	title, subject, headline    the first key words, capitalised
//	language, locale            en
//	unit(s)                     fahrenheit when the text says so, else celsius
//	currency                    USD
//	anything else               "mock <name>"
//
// maxLength/minLength are honoured by cutting or padding.

var (
	emailRE  = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	urlRE    = regexp.MustCompile(`https?://[^\s"'<>)\]]+`)
	dateRE   = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
	phoneRE  = regexp.MustCompile(`\+?\d[\d ().-]{6,}\d`)
	numberRE = regexp.MustCompile(`(?:^|[\s($£€:=])(-?\d+(?:\.\d+)?)\b`)
	idRE     = regexp.MustCompile(`#\d{3,}|\b[A-Z]{2,5}-?\d{3,}\b|\b\d{5,}\b`)
	placeRE  = regexp.MustCompile(`\b(?:in|for|at|to|from|near|of)\s+((?:[A-Z][\p{L}'.-]*\p{L})(?:\s+[A-Z][\p{L}'.-]*\p{L}){0,2})`)
	personRE = regexp.MustCompile(`(?:\b(?i:my name is|i am|i'm|this is|name:))\s+([A-Z][\p{L}'-]+(?:\s+[A-Z][\p{L}'-]+)?)`)
)

// placeStop are capitalised words after "in"/"for" that are not places.
var placeStop = setOf(`i the a an my our your this that monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december today tomorrow`)

type gen struct {
	c        *convo
	root     *schema
	toolMode bool
	full     bool // the value reached maxGenerated and was cut short
}

// maxGenerated bounds a generated value in bytes, as a model's output
// limit bounds its answer: a schema can ask for far more (a huge
// minLength, minItems multiplied at each level, a recursive schema with
// several branches) than any answer holds. A value cut there is an answer
// that ran out of room, with finish_reason "length".
const maxGenerated = 64 << 10

// room reports whether dst may grow, and remembers when it may not.
func (g *gen) room(dst []byte) bool {
	if len(dst) >= maxGenerated {
		g.full = true
	}
	return !g.full
}

func (g *gen) value(dst []byte, s *schema, name string, depth int) []byte {
	if !g.room(dst) {
		return dst
	}
	s = resolve(g.root, s)
	if s == nil {
		return appendJSONString(dst, g.str(name, nil))
	}
	if s.constVal != nil {
		return appendCompact(dst, s.constVal)
	}
	if len(s.enum) > 0 {
		return appendCompact(dst, s.enum[g.enumIndex(s.enum)])
	}
	if s.def != nil {
		return appendCompact(dst, s.def)
	}
	kind := s.kind()
	if depth > 12 { // a recursive schema: stop with the smallest value
		switch kind {
		case "object":
			return append(dst, "{}"...)
		case "array":
			return append(dst, "[]"...)
		}
	}
	switch kind {
	case "object":
		return g.object(dst, s, depth)
	case "array":
		return g.array(dst, s, name, depth)
	case "integer", "number":
		v, _ := g.number(name, s, kind == "integer")
		return appendNumber(dst, v, kind == "integer")
	case "boolean":
		return append(dst, "true"...)
	case "null":
		return append(dst, "null"...)
	}
	return appendJSONString(dst, g.str(name, s))
}

func (g *gen) object(dst []byte, s *schema, depth int) []byte {
	dst = append(dst, '{')
	first := true
	all := !g.toolMode || len(s.required) == 0
	member := func(name string, s *schema) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, name)
		dst = append(dst, ':')
		dst = g.value(dst, s, name, depth+1)
	}
	for _, p := range s.props {
		if !g.room(dst) {
			return dst
		}
		if all || s.isRequired(p.name) || g.hasEvidence(p) {
			member(p.name, p.s)
		}
	}
	for _, name := range s.required { // required without a schema of its own
		if !g.room(dst) {
			return dst
		}
		if !s.hasProp(name) {
			member(name, nil)
		}
	}
	return append(dst, '}')
}

func (g *gen) array(dst []byte, s *schema, name string, depth int) []byte {
	n := 1
	if s.minItems > n {
		n = s.minItems
	}
	if s.maxItems >= 0 && n > s.maxItems {
		n = s.maxItems
	}
	dst = append(dst, '[')
	items := resolve(g.root, s.items)
	nn := normName(name)
	if (items == nil || (items.kind() == "string" && items.enum == nil && items.constVal == nil && items.format == "")) &&
		nameHas(nn, "tags", "tag", "keywords", "keyword", "topics", "entities", "key_words", "terms") {
		kw := keyWords(g.c.text, 3)
		want := len(kw)
		if want < n {
			want = n
		}
		if s.maxItems >= 0 && want > s.maxItems {
			want = s.maxItems
		}
		for i := 0; i < want && g.room(dst); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if i < len(kw) {
				dst = appendJSONString(dst, strings.ToLower(kw[i]))
			} else {
				dst = appendJSONString(dst, "mock-"+strconv.Itoa(i+1))
			}
		}
		return append(dst, ']')
	}
	for i := 0; i < n; i++ {
		if !g.room(dst) {
			return dst
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = g.value(dst, s.items, singular(name), depth+1)
	}
	return append(dst, ']')
}

func singular(name string) string {
	if len(name) > 3 && strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss") {
		return name[:len(name)-1]
	}
	return name
}

// enumIndex picks an enum value: a string enum is a label list.
func (g *gen) enumIndex(enum []json.RawMessage) int {
	if len(enum) < 2 {
		return 0
	}
	items := make([]label, 0, len(enum))
	for _, raw := range enum {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return 0
		}
		items = append(items, label{text: s})
	}
	if g.c.label != "" {
		for i, it := range items {
			if strings.EqualFold(it.text, g.c.label) {
				return i
			}
		}
	}
	return chooseLabel(items, g.c.stems())
}

// hasEvidence reports whether the text supplies a value for an optional
// tool argument.
func (g *gen) hasEvidence(p prop) bool {
	s := resolve(g.root, p.s)
	if s == nil {
		_, ok := g.strFound(p.name, nil)
		return ok
	}
	if len(s.enum) > 0 {
		lower := asciiLower(g.c.text)
		for _, raw := range s.enum {
			var v string
			if json.Unmarshal(raw, &v) == nil && findPhrase(lower, asciiLower(v)) >= 0 {
				return true
			}
		}
		return false
	}
	switch s.kind() {
	case "string":
		_, ok := g.strFound(p.name, s)
		return ok
	case "integer", "number":
		_, ok := g.number(p.name, s, s.kind() == "integer")
		return ok
	}
	return false
}

func (g *gen) number(name string, s *schema, integer bool) (float64, bool) {
	n := normName(name)
	v, found := 1.0, false
	switch {
	case nameHas(n, "confidence", "score", "probability", "certainty", "likelihood"):
		v = 0.9
		if integer {
			v = 1
		}
	case nameHas(n, "count", "quantity", "qty", "number", "num", "amount", "total", "limit", "max", "top", "k", "n",
		"days", "age", "price", "cost", "year", "page", "size", "results", "guests", "people", "nights", "minutes", "hours"):
		if m := numberRE.FindStringSubmatch(g.c.text); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				v, found = f, true
			}
		}
	}
	if integer {
		v = math.Trunc(v)
	}
	if s != nil && s.min != nil {
		lo := *s.min
		if v < lo || (s.exMin && v <= lo) {
			v = lo
			if s.exMin {
				switch {
				case integer:
					v = math.Floor(lo) + 1
				case s.max != nil:
					v = lo/2 + *s.max/2 // (lo+max)/2 overflows near the float limit
				default:
					v = lo + 1
				}
			} else if integer {
				v = math.Ceil(lo)
			}
		}
	}
	if s != nil && s.max != nil {
		hi := *s.max
		if v > hi || (s.exMax && v >= hi) {
			v = hi
			if s.exMax {
				switch {
				case integer:
					v = math.Ceil(hi) - 1
				case s.min != nil:
					v = hi/2 + *s.min/2
				default:
					v = hi - 1
				}
			} else if integer {
				v = math.Floor(hi)
			}
		}
	}
	return v, found
}

// appendNumber writes v as a JSON number: whole numbers without a
// fraction, those beyond int64 included.
func appendNumber(dst []byte, v float64, integer bool) []byte {
	switch {
	case math.IsNaN(v):
		v = 0
	case math.IsInf(v, 0):
		v = math.Copysign(math.MaxFloat64, v)
	}
	if (integer || v == math.Trunc(v)) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// str returns a string value for a property, honouring length bounds.
func (g *gen) str(name string, s *schema) string {
	v, _ := g.strFound(name, s)
	if s != nil {
		if s.maxLength >= 0 && utf8.RuneCountInString(v) > s.maxLength {
			r := []rune(v)
			v = string(r[:s.maxLength])
		}
		if n := utf8.RuneCountInString(v); s.minLength > n {
			pad := s.minLength - n
			if pad > maxGenerated {
				pad, g.full = maxGenerated, true
			}
			v += strings.Repeat("x", pad)
		}
	}
	return v
}

var (
	sentimentLabels = []label{{text: "positive"}, {text: "negative"}, {text: "neutral"}}
	priorityLabels  = []label{{text: "high"}, {text: "medium"}, {text: "low"}}
)

// strFound returns a string for the property and whether it came from the
// text (rather than a placeholder).
func (g *gen) strFound(name string, s *schema) (string, bool) {
	c := g.c
	n := normName(name)
	format := ""
	if s != nil {
		format = s.format
	}
	switch {
	case format == "email" || strings.Contains(n, "email"):
		if m := emailRE.FindString(c.text); m != "" {
			return m, true
		}
		return "user@example.com", false
	case format == "uri" || format == "url" || nameHas(n, "url", "uri", "link", "website", "homepage", "href"):
		if m := urlRE.FindString(c.text); m != "" {
			return strings.TrimRight(m, ".,;:!?"), true
		}
		return "https://example.com", false
	case format == "date-time":
		if m := dateRE.FindString(c.text); m != "" {
			return m + "T09:00:00Z", true
		}
		return "2025-01-15T09:00:00Z", false
	case format == "date" || nameHas(n, "date", "day", "birthday", "dob"):
		if m := dateRE.FindString(c.text); m != "" {
			return m, true
		}
		return "2025-01-15", false
	case format == "time":
		return "09:00:00", false
	case format == "uuid":
		return c.uuid(), false
	case c.label != "" && nameHas(n, "label", "labels", "category", "categories", "class", "classification", "intent",
		"topic", "department", "queue", "bucket", "type", "tag", "team", "route"):
		return c.label, true
	case nameHas(n, "sentiment", "tone", "mood"):
		return sentimentLabels[chooseLabel(sentimentLabels, c.stems())].text, true
	case nameHas(n, "priority", "urgency", "severity"):
		return priorityLabels[chooseLabel(priorityLabels, c.stems())].text, true
	case nameHas(n, "city", "location", "place", "destination", "origin", "town", "country", "region", "state", "where"):
		if p := c.place(); p != "" {
			return p, true
		}
		return "San Francisco", false
	case nameHas(n, "phone", "tel", "telephone", "mobile"):
		if m := phoneRE.FindString(c.text); m != "" {
			return m, true
		}
		return "+1-555-0100", false
	case isPersonName(n):
		if p := c.person(); p != "" {
			if nameHas(n, "first") {
				p, _, _ = strings.Cut(p, " ")
			} else if nameHas(n, "last", "surname") {
				if i := strings.LastIndexByte(p, ' '); i >= 0 {
					p = p[i+1:]
				}
			}
			return p, true
		}
		switch {
		case nameHas(n, "first"):
			return "Alex", false
		case nameHas(n, "last", "surname"):
			return "Doe", false
		}
		return "Alex Doe", false
	case n == "id" || strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "_number") || nameHas(n, "reference", "sku"):
		if m := idRE.FindString(c.text); m != "" {
			return strings.TrimPrefix(m, "#"), true
		}
		return "mock-" + hex.EncodeToString(c.sum[24:28]), false
	case nameHas(n, "query", "q", "search", "search_query", "search_term", "term", "question", "prompt", "input",
		"keyword", "keywords", "instruction", "instructions", "request") ||
		(g.toolMode && nameHas(n, "text", "message", "content", "body", "msg", "note")):
		if q := c.queryText(); q != "" {
			return q, true
		}
		return "mock query", false
	case nameHas(n, "answer", "response", "reply", "output", "result"):
		return c.plainAnswer(), false
	case nameHas(n, "summary", "description", "desc", "text", "reason", "reasoning", "explanation", "content",
		"message", "details", "detail", "body", "comment", "comments", "notes", "note", "rationale", "analysis",
		"justification", "issue", "problem", "feedback"):
		return c.summary(), false
	case nameHas(n, "title", "subject", "headline", "heading", "topic"):
		return c.title(), false
	case nameHas(n, "language", "lang", "locale"):
		return "en", false
	case nameHas(n, "unit", "units", "scale"):
		low := asciiLower(c.text)
		if strings.Contains(low, "fahrenheit") || strings.Contains(low, "°f") {
			return "fahrenheit", true
		}
		return "celsius", strings.Contains(low, "celsius") || strings.Contains(low, "°c")
	case nameHas(n, "currency"):
		return "USD", false
	case nameHas(n, "status", "state"):
		return "open", false
	}
	if n == "" {
		return c.mark("mock"), false
	}
	return c.mark("mock " + strings.ReplaceAll(n, "_", " ")), false
}

func isPersonName(n string) bool {
	if n == "name" || nameHas(n, "author", "sender", "recipient", "customer", "assignee", "username", "contact") {
		return !nameHas(n, "id", "email", "file", "product", "company", "org", "organization", "app", "project", "tool", "function")
	}
	if strings.HasSuffix(n, "_name") {
		return nameHas(n, "full", "first", "last", "customer", "user", "person", "contact", "sender", "author", "given", "family", "display")
	}
	return false
}

// appendCompact appends raw JSON without insignificant white space.
func appendCompact(dst []byte, raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return append(dst, "null"...)
	}
	return append(dst, b.Bytes()...)
}
