// Package shape reads chat requests and answers as the learning loop sees
// them: a request's shape (the key of its pattern, the fixed parts a person
// reads, the slots that vary), whether an artifact may answer it at all,
// and an answer's text and tool calls. It is pure: no store, no clock.
package shape

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Slot is a varying part of a request's user content: a labelled field
// ("Subject: …" gives the slot "subject") or the free text around them
// ("text").
type Slot struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Shape is what a request looks like once its varying parts are taken out:
// the key of its pattern, and the slots that vary.
type Shape struct {
	// Key is the hex SHA-256 of the fixed parts: app, model, the system and
	// developer prompts, the roles of the messages in order, the skeleton of
	// each user message (its field labels, with the values as slots),
	// response_format and the names of the offered tools.
	Key string
	// Fingerprints names the fixed parts readably, for the pattern's
	// record.
	Fingerprints Fingerprints
	// Slots are the varying parts of the last user message.
	Slots []Slot
}

// Fingerprints are the parts of a shape a person reads.
type Fingerprints struct {
	App            string   `json:"app"`
	Model          string   `json:"model"`
	SystemHash     string   `json:"systemHash"` // first 16 hex digits of the system prompt's SHA-256
	SystemPreview  string   `json:"systemPreview"`
	Roles          []string `json:"roles"`
	Skeleton       string   `json:"skeleton"` // the last user message with its slots as {{name}}
	ResponseFormat string   `json:"responseFormat,omitempty"`
	Tools          []string `json:"tools,omitempty"`
}

// SlotText is every slot's value joined by newlines: what a classifier
// reads.
func (s Shape) SlotText() string {
	switch len(s.Slots) {
	case 0:
		return ""
	case 1:
		return s.Slots[0].Value
	}
	var b strings.Builder
	for i, sl := range s.Slots {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(sl.Value)
	}
	return b.String()
}

// Slot returns the value of the named slot.
func (s Shape) Slot(name string) (string, bool) {
	for _, sl := range s.Slots {
		if sl.Name == name {
			return sl.Value, true
		}
	}
	return "", false
}

type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Functions  json.RawMessage `json:"functions"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	N          *int            `json:"n"`
	Logprobs   *bool           `json:"logprobs"`
}

// Unlearnable says why a request is outside what an artifact may answer,
// or "" when it is within: an artifact sees only text and answers one
// text choice, so a request with images, audio or files, legacy functions,
// a forced tool choice, a JSON schema to follow, several choices or log
// probabilities is neither learned from nor served.
func Unlearnable(nonText bool, functions bool, toolChoice string, responseFormat string, n int, logprobs bool) string {
	switch {
	case nonText:
		return "the request has parts other than text (images, audio, files), which an artifact cannot see"
	case functions:
		return "the request offers legacy functions"
	case toolChoice != "" && toolChoice != "auto" && toolChoice != "none":
		return "the request forces a tool call"
	case responseFormat == "json_schema":
		return "the request asks for a JSON schema"
	case n > 1:
		return "the request asks for several choices"
	case logprobs:
		return "the request asks for log probabilities"
	}
	return ""
}

// ErrNoShape is returned for a request with no user message to learn from,
// or one an artifact may not answer (see Unlearnable).
var ErrNoShape = errors.New("learning: the request has no user message")

// Parse fingerprints a chat-completions request body sent by app.
func Parse(app string, body []byte) (Shape, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Shape{}, err
	}
	msgs := make([]Message, len(w.Messages))
	nonText := false
	for i, m := range w.Messages {
		text, plain := contentText(m.Content)
		nonText = nonText || !plain
		msgs[i] = Message{Role: m.Role, Content: text}
	}
	rf := ""
	if w.ResponseFormat != nil {
		rf = w.ResponseFormat.Type
	}
	choice := ""
	if len(w.ToolChoice) > 0 && json.Unmarshal(w.ToolChoice, &choice) != nil {
		choice = "forced" // an object naming a function
	}
	n := 0
	if w.N != nil {
		n = *w.N
	}
	hasFunctions := len(w.Functions) > 0 && string(w.Functions) != "null"
	if Unlearnable(nonText, hasFunctions, choice, rf, n, w.Logprobs != nil && *w.Logprobs) != "" {
		return Shape{}, ErrNoShape
	}
	tools := make([]string, 0, len(w.Tools))
	for _, t := range w.Tools {
		tools = append(tools, t.Function.Name)
	}
	return Of(app, w.Model, msgs, rf, tools)
}

// Message is one chat message flattened to text.
type Message struct {
	Role    string
	Content string
}

// Of fingerprints a request already parsed. The last user message is
// the one whose content varies; earlier user and assistant messages (a
// few-shot prompt) are fixed parts.
func Of(app, model string, msgs []Message, responseFormat string, tools []string) (Shape, error) {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = i
			break
		}
	}
	if last < 0 {
		return Shape{}, ErrNoShape
	}
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	fp := Fingerprints{App: app, Model: model, ResponseFormat: responseFormat, Roles: make([]string, len(msgs))}
	write("svc-shape-v1", app, model, responseFormat)
	var system strings.Builder
	for i, m := range msgs {
		fp.Roles[i] = m.Role
		write("role", m.Role)
		if i == last {
			continue
		}
		write(m.Content)
		if m.Role == "system" || m.Role == "developer" {
			system.WriteString(m.Content)
			system.WriteByte(0)
		}
	}
	skeleton, slots := splitSlots(msgs[last].Content)
	fp.Skeleton = skeleton
	write("skeleton", skeleton)
	if len(tools) > 0 {
		fp.Tools = append([]string(nil), tools...)
		sort.Strings(fp.Tools)
		write(append([]string{"tools"}, fp.Tools...)...)
	}
	sh := sha256.Sum256([]byte(system.String()))
	fp.SystemHash = hex.EncodeToString(sh[:8])
	fp.SystemPreview = Preview(strings.ReplaceAll(system.String(), "\x00", " "), 120)
	return Shape{Key: hex.EncodeToString(h.Sum(nil)), Fingerprints: fp, Slots: slots}, nil
}

// splitSlots separates a user message into its skeleton and its slots. A
// line of the leading block that starts with a short label and a colon
// ("Subject: …", "Order id: …") is a field: the label stays in the
// skeleton, the value is the slot named by the label. The block ends at the
// first blank or other line; everything from there is free text, one slot
// ("text"), so that a colon in a message body never changes the shape.
func splitSlots(content string) (string, []Slot) {
	var (
		skel  strings.Builder
		slots []Slot
		free  []string
	)
	flush := func() {
		if len(free) == 0 {
			return
		}
		name := "text"
		if n := countFree(slots); n > 0 {
			name = "text" + strconv.Itoa(n+1)
		}
		slots = append(slots, Slot{Name: name, Value: strings.TrimSpace(strings.Join(free, "\n"))})
		skel.WriteString("{{" + name + "}}\n")
		free = free[:0]
	}
	header := true // fields are read only in the leading block of lines
	for _, line := range strings.Split(content, "\n") {
		if !header {
			free = append(free, line)
			continue
		}
		if label, value, ok := fieldLine(line); ok {
			flush()
			name := slotName(label)
			slots = append(slots, Slot{Name: name, Value: strings.TrimSpace(value)})
			skel.WriteString(label + ": {{" + name + "}}\n")
			continue
		}
		header = false
		if strings.TrimSpace(line) == "" {
			continue
		}
		free = append(free, line)
	}
	flush()
	return strings.TrimSuffix(skel.String(), "\n"), slots
}

func countFree(slots []Slot) int {
	n := 0
	for _, s := range slots {
		if strings.HasPrefix(s.Name, "text") {
			n++
		}
	}
	return n
}

// fieldLine recognises "Label: value" with a label of one to three words
// of letters.
func fieldLine(line string) (label, value string, ok bool) {
	i := strings.IndexByte(line, ':')
	if i <= 0 || i > 32 {
		return "", "", false
	}
	label = strings.TrimSpace(line[:i])
	if label == "" || strings.Count(label, " ") > 2 || !unicode.IsUpper(rune(label[0])) && !unicode.IsLower(rune(label[0])) {
		return "", "", false
	}
	for _, r := range label {
		if !unicode.IsLetter(r) && r != ' ' && r != '_' && r != '-' {
			return "", "", false
		}
	}
	rest := line[i+1:]
	if strings.HasPrefix(rest, "//") { // a URL, not a field
		return "", "", false
	}
	return label, rest, true
}

func slotName(label string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return unicode.ToLower(r)
	}, label)
}

// contentText flattens a message's content to text, text parts joined by
// a newline as the gateway joins them; plain is false when the content has
// parts other than text.
func contentText(raw json.RawMessage) (text string, plain bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		plain = true
		for _, p := range parts {
			if p.Type != "text" {
				plain = false
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
		return b.String(), plain
	}
	return "", len(raw) == 0 || string(raw) == "null"
}

// Preview is s with its white space folded, cut to at most n bytes (at a
// character's start) and marked "…" when it was cut.
func Preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
