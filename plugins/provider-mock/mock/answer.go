package mock

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const (
	// createdEpoch and createdSpread place "created" in 2024, derived from
	// the request hash: stable for a body, different across bodies.
	createdEpoch  = 1704067200 // 2024-01-01T00:00:00Z
	createdSpread = 366 * 24 * 3600

	answerPrefix = "Mock answer: "
	emptyAnswer  = answerPrefix + "Hello! I am the mock provider; send some text to get a deterministic reply."

	keyWordsInAnswer = 12
)

// answer is the complete, deterministic reply to one request.
type answer struct {
	id      string
	created int64
	model   string
	choices []choice // n of them; choice 0 is the answer to n = 1
	usage   pluginapi.Usage
}

// choice is one of an answer's choices.
type choice struct {
	content string
	tool    *toolCall // when set, content is null
	finish  string
}

type toolCall struct {
	id, name, args string
}

// compose works out the whole answer to body. It is a pure function of
// body.
func compose(body []byte) (*answer, error) {
	req, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	var hx [64]byte
	hex.Encode(hx[:], sum[:])
	a := &answer{
		id:      "chatcmpl-mock-" + string(hx[:24]),
		created: createdEpoch + int64(binary.BigEndian.Uint32(sum[28:])%createdSpread),
		model:   req.model,
		choices: make([]choice, req.n),
	}
	base := newConvo(req, sum)
	completion := 0
	for i := range a.choices {
		c := base.variant(i)
		tokens, err := c.choose(&a.choices[i], string(hx[24:48]))
		if err != nil {
			return nil, err
		}
		completion += tokens
	}
	a.usage = usage(req.promptTokens, completion)
	return a, nil
}

// choose works out choice c.choice of the answer into ch and returns its
// completion tokens. callID is the tool call id of choice 0.
func (c *convo) choose(ch *choice, callID string) (int, error) {
	req := c.req
	ch.finish = "stop"
	if t, mention := c.pickTool(); t != nil {
		if mention[0] >= 0 {
			full := req.msgs[c.user].text
			c.text, c.wordsDone = collapseSpace(full[:mention[0]]+" "+full[mention[1]:]), false
		}
		g := gen{c: c, toolMode: true}
		args := []byte("{}")
		if len(t.Function.Parameters) > 0 {
			root := new(schema)
			if err := root.UnmarshalJSON(t.Function.Parameters); err != nil {
				return 0, badRequest("tools", "invalid_value", "invalid parameters schema for function %q: %v", t.Function.Name, err)
			}
			g.root = root
			if r := resolve(root, root); r != nil && r.kind() == "object" {
				args = g.value(make([]byte, 0, 128), root, "", 0)
			}
		}
		if c.choice > 0 {
			h := sha256.Sum256(append(c.sum[:], byte(c.choice)))
			callID = hex.EncodeToString(h[:12])
		}
		ch.tool = &toolCall{id: "call_" + callID, name: t.Function.Name, args: string(args)}
		ch.finish = "tool_calls"
		if g.full {
			ch.finish = "length"
		}
		return tokensPerToolCall + estimateTokens(ch.tool.name) + estimateJSONTokens(ch.tool.args), nil
	}

	switch {
	case req.format == formatJSONSchema:
		g := gen{c: c, root: req.schema}
		ch.content = string(g.value(make([]byte, 0, 256), req.schema, "", 0))
		if g.full {
			ch.finish = "length"
		}
	case req.format == formatJSONObject:
		ch.content = c.jsonObject()
	case c.label != "":
		ch.content = c.label
	default:
		ch.content = c.plainAnswer()
	}
	if req.maxTokens > 0 {
		content, completion, cut := truncateTokens(ch.content, req.maxTokens)
		ch.content = content
		if cut {
			ch.finish = "length"
		}
		return completion, nil
	}
	return estimateTokens(ch.content), nil
}

func usage(prompt, completion int) pluginapi.Usage {
	return pluginapi.Usage{
		PromptTokens:     int64(prompt),
		CompletionTokens: int64(completion),
		TotalTokens:      int64(prompt + completion),
	}
}

// convo is what the heuristics know about a request.
type convo struct {
	req       *request
	sum       [32]byte
	user      int    // index of the last user message, or -1
	text      string // the text answered: the last user message minus any label instruction in it
	words     []string
	wordsDone bool
	labels    []label
	label     string // the chosen label, when the prompt lists labels
	labelAt   int    // its index in labels
	afterTool bool   // the conversation ends with a tool result
	choice    int    // which of the n choices is being answered
}

// variant is the convo of choice i. Choices after the first differ from
// it: a label answer takes the next labels in the prompt's order (so n up
// to the number of labels gives distinct labels), free text is marked with
// the choice's number, and a tool call gets its own id.
func (c *convo) variant(i int) *convo {
	v := *c
	v.choice = i
	if i > 0 && len(c.labels) > 0 {
		v.labelAt = (c.labelAt + i) % len(c.labels)
		v.label = c.labels[v.labelAt].text
	}
	return &v
}

// mark makes free text of a later choice its own: "text (choice 2)".
func (c *convo) mark(s string) string {
	if c.choice == 0 {
		return s
	}
	return s + " (choice " + strconv.Itoa(c.choice+1) + ")"
}

func newConvo(req *request, sum [32]byte) *convo {
	c := &convo{req: req, sum: sum, user: -1}
	for i := len(req.msgs) - 1; i >= 0; i-- {
		if req.msgs[i].role == "user" {
			c.user = i
			break
		}
	}
	if c.user >= 0 {
		c.text = req.msgs[c.user].text
	} else {
		for i := len(req.msgs) - 1; i >= 0; i-- {
			if r := req.msgs[i].role; r == "system" || r == "developer" {
				c.text = req.msgs[i].text
				break
			}
		}
	}
	last := req.msgs[len(req.msgs)-1].role
	c.afterTool = last == "tool" || last == "function"

	// Labels: system/developer messages first, then the last user message,
	// then earlier user messages, latest first.
	try := func(i int) bool {
		ll, ok := detectLabels(req.msgs[i].text)
		if !ok {
			return false
		}
		c.labels = ll.items
		if i == c.user {
			t := c.text
			c.text = strings.TrimSpace(t[:ll.start] + "\n" + t[ll.end:])
		}
		return true
	}
	found := false
	for i := range req.msgs {
		if r := req.msgs[i].role; (r == "system" || r == "developer") && try(i) {
			found = true
			break
		}
	}
	if !found && c.user >= 0 && !try(c.user) {
		for i := c.user - 1; i >= 0; i-- {
			if req.msgs[i].role == "user" && try(i) {
				break
			}
		}
	}
	if len(c.labels) > 0 {
		c.labelAt = chooseLabel(c.labels, c.stems())
		c.label = c.labels[c.labelAt].text
	}
	return c
}

// stems returns the scoring words of c.text, computed once.
func (c *convo) stems() []string {
	if !c.wordsDone {
		c.words, c.wordsDone = scoringWords(c.text), true
	}
	return c.words
}

// plainAnswer is the free-text reply: "Mock answer: " and the key words of
// the last user message; after a tool result, what the tool returned.
func (c *convo) plainAnswer() string {
	if c.afterTool {
		m := c.req.msgs[len(c.req.msgs)-1]
		return c.mark(answerPrefix + c.toolName(m.toolCallID, m.name) + " returned " + clip(collapseSpace(m.text), 200) + ".")
	}
	kw := keyWords(c.text, keyWordsInAnswer)
	if len(kw) == 0 {
		return c.mark(emptyAnswer)
	}
	return c.mark(answerPrefix + strings.Join(kw, " ") + ".")
}

// toolName finds the function an earlier assistant message called with id.
func (c *convo) toolName(id, name string) string {
	if name != "" {
		return name
	}
	for i := len(c.req.msgs) - 1; i >= 0; i-- {
		for _, tc := range c.req.msgs[i].toolCalls {
			if tc.ID == id && tc.Function.Name != "" {
				return tc.Function.Name
			}
		}
	}
	return "the tool"
}

func (c *convo) summary() string {
	kw := keyWords(c.text, keyWordsInAnswer)
	if len(kw) == 0 {
		return c.mark("No details provided.")
	}
	return c.mark(strings.Join(kw, " "))
}

func (c *convo) title() string {
	kw := keyWords(c.text, 6)
	if len(kw) == 0 {
		return c.mark("Untitled")
	}
	t := strings.Join(kw, " ")
	r, size := utf8.DecodeRuneInString(t)
	return c.mark(string(unicode.ToUpper(r)) + t[size:])
}

func (c *convo) uuid() string {
	var b [16]byte
	copy(b[:], c.sum[:16])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// place is the first capitalised word run after in/for/at/to/from/near.
func (c *convo) place() string {
	for _, m := range placeRE.FindAllStringSubmatch(c.text, -1) {
		words := strings.Fields(m[1])
		for len(words) > 0 && placeStop[strings.ToLower(words[0])] {
			words = words[1:]
		}
		for len(words) > 0 && placeStop[strings.ToLower(words[len(words)-1])] {
			words = words[:len(words)-1]
		}
		if len(words) > 0 {
			return strings.Join(words, " ")
		}
	}
	return ""
}

func (c *convo) person() string {
	if m := personRE.FindStringSubmatch(c.text); m != nil {
		return m[1]
	}
	return ""
}

// queryFiller are words dropped from the front of a tool query ("please
// use search_web to find ..." → "find ...").
var queryFiller = setOf(`please can could would you use call run invoke execute the a tool function to with and for via
using me i want need`)

// queryText is the user's text for a query-like argument: without the
// tool's name (already gone from c.text in a tool call) and leading filler,
// on one line.
func (c *convo) queryText() string {
	f := strings.Fields(c.text)
	for len(f) > 0 && queryFiller[strings.ToLower(strings.Trim(f[0], ",.:;!?"))] {
		f = f[1:]
	}
	return clip(strings.TrimRight(strings.Join(f, " "), " ?.!"), 300)
}

var (
	exampleKeyRE  = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]{0,40})"\s*:`)
	keysTriggerRE = regexp.MustCompile(`\b(?:keys|fields|properties|attributes)\b`)
)

// jsonObject answers json_object mode: the keys the prompt asks for (from
// an example object such as {"category": ..., "priority": ...} or a phrase
// such as "with keys category and priority"), else {"answer": ..., "label":
// ...} with label only when the prompt lists labels.
func (c *convo) jsonObject() string {
	keys := c.requestedKeys()
	root := &schema{typ: "object", hasProps: true, maxItems: -1, maxLength: -1}
	if len(keys) == 0 {
		keys = append(keys, "answer")
		if c.label != "" {
			keys = append(keys, "label")
		}
	}
	for _, k := range keys {
		root.props = append(root.props, prop{name: k, s: &schema{typ: typeForName(k), maxItems: -1, maxLength: -1}})
	}
	g := gen{c: c, root: root}
	return string(g.value(make([]byte, 0, 128), root, "", 0))
}

func (c *convo) requestedKeys() []string {
	var texts []string
	for _, m := range c.req.msgs {
		if m.role == "system" || m.role == "developer" {
			texts = append(texts, m.text)
		}
	}
	if c.user >= 0 {
		texts = append(texts, c.req.msgs[c.user].text)
	}
	var keys []string
	add := func(k string) {
		for _, x := range keys {
			if x == k {
				return
			}
		}
		if len(keys) < 20 {
			keys = append(keys, k)
		}
	}
	for _, t := range texts {
		if i := strings.IndexByte(t, '{'); i >= 0 {
			for _, m := range exampleKeyRE.FindAllStringSubmatch(t[i:], -1) {
				add(m[1])
			}
		}
	}
	if len(keys) > 0 {
		return keys
	}
	for _, t := range texts {
		lower := asciiLower(t)
		for _, loc := range keysTriggerRE.FindAllStringIndex(lower, -1) {
			items, _, ok := parseListAt(t, lower, loc[1], false, 0)
			if !ok {
				continue
			}
			for _, it := range items {
				if isIdentifier(it.text) {
					add(it.text)
				}
			}
			if len(keys) > 0 {
				return keys
			}
		}
	}
	return keys
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return s != ""
}

// typeForName guesses a JSON type for a key named in a prompt.
func typeForName(k string) string {
	n := normName(k)
	switch {
	case nameHas(n, "confidence", "score", "probability", "certainty"):
		return "number"
	case nameHas(n, "count", "quantity", "qty", "age", "total", "number"):
		return "integer"
	case strings.HasPrefix(n, "is_") || strings.HasPrefix(n, "has_") || strings.HasPrefix(n, "needs_") ||
		strings.HasPrefix(n, "should_") || strings.HasPrefix(n, "can_"):
		return "boolean"
	case nameHas(n, "tags", "keywords", "topics", "entities"):
		return "array"
	}
	return "string"
}

// pickTool decides whether to call a tool and which, returning the span of
// its name in the last user message when it was named there.
func (c *convo) pickTool() (*rawTool, [2]int) {
	none := [2]int{-1, -1}
	tools := c.req.tools
	if len(tools) == 0 {
		return nil, none
	}
	switch c.req.toolChoice {
	case choiceNone:
		return nil, none
	case choiceForced:
		for i := range tools {
			if tools[i].Function.Name == c.req.forcedTool {
				_, span := c.namedTool(&tools[i])
				return &tools[i], span
			}
		}
		return nil, none
	case choiceRequired:
		if t, span := c.namedTool(nil); t != nil {
			return t, span
		}
		return &tools[0], none
	}
	if c.afterTool {
		return nil, none
	}
	return c.namedTool(nil)
}

// namedTool finds the tool whose name the last user message mentions
// (case-insensitively, also with '_', '-' and camelCase read as spaces);
// the earliest mention wins, then the longest name. With only set, it
// looks for that tool's mention alone.
func (c *convo) namedTool(only *rawTool) (*rawTool, [2]int) {
	best, span := (*rawTool)(nil), [2]int{-1, -1}
	if c.user < 0 {
		return nil, span
	}
	lower := asciiLower(c.req.msgs[c.user].text)
	check := func(t *rawTool) {
		for _, v := range nameVariants(t.Function.Name) {
			i := findPhrase(lower, v)
			if i < 0 {
				continue
			}
			if best == nil || i < span[0] || (i == span[0] && i+len(v) > span[1]) {
				best, span = t, [2]int{i, i + len(v)}
			}
		}
	}
	if only != nil {
		check(only)
		return best, span
	}
	for i := range c.req.tools {
		check(&c.req.tools[i])
	}
	return best, span
}

// nameVariants are the spellings of a function name looked for in text:
// "get_weather" → "get_weather", "get weather"; "getWeather" → "getweather",
// "get weather".
func nameVariants(name string) []string {
	lower := asciiLower(name)
	out := []string{lower}
	spaced := asciiLower(collapseSpace(splitIdentifier(name)))
	if spaced != lower && spaced != "" {
		out = append(out, spaced)
	}
	return out
}
