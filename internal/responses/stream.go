package responses

import (
	"encoding/json"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Emit receives one Responses stream event: its type and its JSON.
type Emit func(eventType string, data []byte) error

// Stream turns the chunks of a streamed chat completion into the events of
// a streamed response, numbered by sequence_number: Start, then Chunk for
// each chunk, then Finish.
type Stream struct {
	resp   Response
	suffix string
	seq    int
	emit   Emit
	msg    *streamItem         // the open message, if any
	calls  map[int]*streamItem // function calls by the chat tool call's index
	// unindexed is the key of the latest call that came without an index.
	unindexed int
	items     []*streamItem // in output order
	finish    string
	held      int // bytes of text and arguments the items hold
}

// MaxHeld bounds the text and arguments a Stream holds for the done
// events and the response that close it: an upstream's stream of any
// length cannot make svc hold more, and one past it fails as too large.
const MaxHeld = 32 << 20

// errTooLarge ends a stream past MaxHeld, the provider's doing.
var errTooLarge = &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: pluginapi.CodeResponseTooLarge,
	Message: "the provider's answer is larger than the 32 MiB svc holds to translate it"}

// hold counts n more bytes held, failing past MaxHeld.
func (s *Stream) hold(n int) error {
	if s.held += n; s.held > MaxHeld {
		return errTooLarge
	}
	return nil
}

type streamItem struct {
	item  Item
	index int
	text  strings.Builder // a call's arguments
	parts []*streamPart   // a message's content, in order
	done  bool
}

// streamPart is a message's content part as it arrives: output_text or
// refusal.
type streamPart struct {
	typ  string
	text strings.Builder
}

// NewStream starts the events of resp (Request.Response), sent to emit.
func NewStream(resp Response, emit Emit) *Stream {
	return &Stream{resp: resp, suffix: strings.TrimPrefix(resp.ID, "resp_"), emit: emit, calls: map[int]*streamItem{}}
}

type responseEvent struct {
	Type     string    `json:"type"`
	Seq      int       `json:"sequence_number"`
	Response *Response `json:"response"`
}

type itemEvent struct {
	Type        string `json:"type"`
	Seq         int    `json:"sequence_number"`
	OutputIndex int    `json:"output_index"`
	Item        Item   `json:"item"`
}

type partEvent struct {
	Type         string `json:"type"`
	Seq          int    `json:"sequence_number"`
	ItemID       string `json:"item_id"`
	OutputIndex  int    `json:"output_index"`
	ContentIndex int    `json:"content_index"`
	Part         Part   `json:"part"`
}

type textEvent struct {
	Type         string  `json:"type"`
	Seq          int     `json:"sequence_number"`
	ItemID       string  `json:"item_id"`
	OutputIndex  int     `json:"output_index"`
	ContentIndex int     `json:"content_index"`
	Delta        *string `json:"delta,omitempty"`
	Text         *string `json:"text,omitempty"`
	Logprobs     []any   `json:"logprobs"`
}

type refusalEvent struct {
	Type         string  `json:"type"`
	Seq          int     `json:"sequence_number"`
	ItemID       string  `json:"item_id"`
	OutputIndex  int     `json:"output_index"`
	ContentIndex int     `json:"content_index"`
	Delta        *string `json:"delta,omitempty"`
	Refusal      *string `json:"refusal,omitempty"`
}

type argsEvent struct {
	Type        string  `json:"type"`
	Seq         int     `json:"sequence_number"`
	ItemID      string  `json:"item_id"`
	OutputIndex int     `json:"output_index"`
	Delta       *string `json:"delta,omitempty"`
	Name        string  `json:"name,omitempty"`
	Arguments   *string `json:"arguments,omitempty"`
}

type errorEvent struct {
	Type    string  `json:"type"`
	Seq     int     `json:"sequence_number"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// send numbers and emits one event; set writes the sequence number into v.
func (s *Stream) send(typ string, v any, set func(int)) error {
	set(s.seq)
	s.seq++
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.emit(typ, b)
}

func (s *Stream) sendResponse(typ string) error {
	e := responseEvent{Type: typ, Response: &s.resp}
	return s.send(typ, &e, func(n int) { e.Seq = n })
}

// Start sends response.created and response.in_progress.
func (s *Stream) Start() error {
	if err := s.sendResponse("response.created"); err != nil {
		return err
	}
	return s.sendResponse("response.in_progress")
}

// Chunk translates one chat chunk.
func (s *Stream) Chunk(data []byte) error {
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil // not a chunk svc can read: nothing to say of it
	}
	if c.Usage != nil {
		s.resp.Usage = c.Usage.usage()
	}
	if len(c.Choices) == 0 {
		return nil
	}
	ch := c.Choices[0]
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		s.finish = *ch.FinishReason
	}
	if d := ch.Delta.Content; d != nil && *d != "" {
		if err := s.text(*d); err != nil {
			return err
		}
	}
	if d := ch.Delta.Refusal; d != nil && *d != "" {
		if err := s.refusal(*d); err != nil {
			return err
		}
	}
	for _, tc := range ch.Delta.ToolCalls {
		if err := s.call(tc); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stream) add(it Item) (*streamItem, error) {
	si := &streamItem{item: it, index: len(s.items)}
	s.items = append(s.items, si)
	e := itemEvent{Type: "response.output_item.added", OutputIndex: si.index, Item: it}
	return si, s.send(e.Type, &e, func(n int) { e.Seq = n })
}

// part returns the open message's part of type typ, opening the message
// and adding the part as needed.
func (s *Stream) part(typ string) (*streamPart, int, error) {
	if s.msg == nil || s.msg.done {
		m, err := s.add(Item{Type: "message", ID: itemID("msg", s.suffix, len(s.items)), Status: "in_progress", Role: "assistant"})
		if err != nil {
			return nil, 0, err
		}
		s.msg = m
	}
	for i, p := range s.msg.parts {
		if p.typ == typ {
			return p, i, nil
		}
	}
	p := &streamPart{typ: typ}
	s.msg.parts = append(s.msg.parts, p)
	e := partEvent{Type: "response.content_part.added", ItemID: s.msg.item.ID, OutputIndex: s.msg.index,
		ContentIndex: len(s.msg.parts) - 1, Part: p.part()}
	return p, e.ContentIndex, s.send(e.Type, &e, func(n int) { e.Seq = n })
}

// part is the content part as it stands.
func (p *streamPart) part() Part {
	text := p.text.String()
	if p.typ == "refusal" {
		return Part{Type: "refusal", Refusal: &text}
	}
	return textPart(text)
}

func (s *Stream) text(delta string) error {
	p, ci, err := s.part("output_text")
	if err != nil {
		return err
	}
	if err := s.hold(len(delta)); err != nil {
		return err
	}
	p.text.WriteString(delta)
	e := textEvent{Type: "response.output_text.delta", ItemID: s.msg.item.ID, OutputIndex: s.msg.index, ContentIndex: ci,
		Delta: &delta, Logprobs: []any{}}
	return s.send(e.Type, &e, func(n int) { e.Seq = n })
}

func (s *Stream) refusal(delta string) error {
	p, ci, err := s.part("refusal")
	if err != nil {
		return err
	}
	if err := s.hold(len(delta)); err != nil {
		return err
	}
	p.text.WriteString(delta)
	e := refusalEvent{Type: "response.refusal.delta", ItemID: s.msg.item.ID, OutputIndex: s.msg.index, ContentIndex: ci, Delta: &delta}
	return s.send(e.Type, &e, func(n int) { e.Seq = n })
}

func (s *Stream) call(tc chatToolCall) error {
	// An upstream that numbers no call starts each with its id: such calls
	// are kept under negative keys, one a new id.
	idx := s.unindexed
	switch {
	case tc.Index != nil:
		idx = *tc.Index
	case tc.ID != "" && (s.calls[idx] == nil || s.calls[idx].item.CallID != tc.ID):
		s.unindexed--
		idx = s.unindexed
	}
	si := s.calls[idx]
	if si == nil {
		if s.msg != nil && !s.msg.done {
			if err := s.close(s.msg, "completed"); err != nil {
				return err
			}
		}
		var err error
		si, err = s.add(Item{Type: "function_call", ID: itemID("fc", s.suffix, len(s.items)), Status: "in_progress",
			CallID: tc.ID, Name: tc.Function.Name})
		if err != nil {
			return err
		}
		s.calls[idx] = si
	}
	if d := tc.Function.Arguments; d != "" {
		if err := s.hold(len(d)); err != nil {
			return err
		}
		si.text.WriteString(d)
		e := argsEvent{Type: "response.function_call_arguments.delta", ItemID: si.item.ID, OutputIndex: si.index, Delta: &d}
		return s.send(e.Type, &e, func(n int) { e.Seq = n })
	}
	return nil
}

// close sends the done events of an item, ended with status.
func (s *Stream) close(si *streamItem, status string) error {
	si.done = true
	si.item.Status = status
	if si.item.Type == "function_call" {
		text := si.text.String()
		si.item.Arguments = text
		e := argsEvent{Type: "response.function_call_arguments.done", ItemID: si.item.ID, OutputIndex: si.index, Name: si.item.Name, Arguments: &text}
		if err := s.send(e.Type, &e, func(n int) { e.Seq = n }); err != nil {
			return err
		}
	} else {
		si.item.Content = make([]Part, len(si.parts))
		for ci, sp := range si.parts {
			part := sp.part()
			si.item.Content[ci] = part
			var err error
			if part.Type == "refusal" {
				e := refusalEvent{Type: "response.refusal.done", ItemID: si.item.ID, OutputIndex: si.index, ContentIndex: ci, Refusal: part.Refusal}
				err = s.send(e.Type, &e, func(n int) { e.Seq = n })
			} else {
				e := textEvent{Type: "response.output_text.done", ItemID: si.item.ID, OutputIndex: si.index, ContentIndex: ci,
					Text: part.Text, Logprobs: []any{}}
				err = s.send(e.Type, &e, func(n int) { e.Seq = n })
			}
			if err != nil {
				return err
			}
			p := partEvent{Type: "response.content_part.done", ItemID: si.item.ID, OutputIndex: si.index, ContentIndex: ci, Part: part}
			if err := s.send(p.Type, &p, func(n int) { p.Seq = n }); err != nil {
				return err
			}
		}
	}
	e := itemEvent{Type: "response.output_item.done", OutputIndex: si.index, Item: si.item}
	return s.send(e.Type, &e, func(n int) { e.Seq = n })
}

// Finish closes the open items and sends response.completed (or
// response.incomplete), with the output and usage.
func (s *Stream) Finish() error {
	if len(s.items) == 0 {
		if err := s.text(""); err != nil { // an empty answer is an empty message
			return err
		}
	}
	for i, si := range s.items {
		if !si.done {
			// The last item is the one a cut answer stopped in, as the
			// response will say.
			status := "completed"
			if i == len(s.items)-1 && cutShort(s.finish) != "" {
				status = "incomplete"
			}
			if err := s.close(si, status); err != nil {
				return err
			}
		}
	}
	s.resp.Output = make([]Item, len(s.items))
	for i, si := range s.items {
		s.resp.Output[i] = si.item
	}
	s.resp.finish(s.finish)
	typ := "response.completed"
	if s.resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	return s.sendResponse(typ)
}

// Fail sends an error event and response.failed, for a stream the upstream
// broke off.
func (s *Stream) Fail(code, message string) error {
	e := errorEvent{Type: "error", Code: code, Message: message}
	if err := s.send(e.Type, &e, func(n int) { e.Seq = n }); err != nil {
		return err
	}
	s.resp.Status = "failed"
	s.resp.Error = &ResponseError{Code: code, Message: message}
	return s.sendResponse("response.failed")
}

// Response is the response as the stream has it so far.
func (s *Stream) Response() Response { return s.resp }
