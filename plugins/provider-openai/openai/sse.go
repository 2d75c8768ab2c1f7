package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// sseStream reads a chat-completions event stream: "data:" lines (joined
// by "\n" when an event has several), ":" comments and keep-alives,
// "event:" names (an "error" event carries an error object), LF, CRLF or
// CR line ends, and "data: [DONE]" or EOF as the end.
type sseStream struct {
	br       *bufio.Reader
	long     []byte // a line longer than br's buffer
	data     []byte // the current event's data
	lines    int    // data lines in the current event
	errEvent bool   // the current event is "event: error"
	afterCR  bool   // the last line ended with a CR that an LF may follow
	events   int    // events dispatched, [DONE] included
	done     bool   // [DONE] came
	finished bool   // a chunk carried a finish_reason
	limit    int64  // bytes of one event
}

const sseBufferSize = 32 << 10

var errDone = errors.New("[DONE]")

var ssePool = sync.Pool{New: func() any {
	return &sseStream{br: bufio.NewReaderSize(nil, sseBufferSize)}
}}

func getSSE(r io.Reader, limit int64) *sseStream {
	s := ssePool.Get().(*sseStream)
	s.br.Reset(r)
	s.limit = limit
	return s
}

// ended reports whether the stream ended as an answer does: with [DONE],
// or, from an upstream that leaves [DONE] out, after a chunk that carried
// a finish_reason. A stream that stops before either was cut short.
func (s *sseStream) ended() bool { return s.done || s.finished }

func putSSE(s *sseStream) {
	s.br.Reset(nil)
	if cap(s.data) > maxPooledBuf {
		s.data = nil
	}
	if cap(s.long) > maxPooledBuf {
		s.long = nil
	}
	s.data, s.long, s.lines, s.errEvent, s.afterCR, s.events = s.data[:0], s.long[:0], 0, false, false, 0
	s.done, s.finished = false, false
	ssePool.Put(s)
}

// run reads events until [DONE] or EOF (nil), send fails (its error), the
// context ends (ctx.Err()) or the upstream fails (a *ProviderError).
// Whether the answer ended (ended) is the caller's to ask.
func (s *sseStream) run(ctx context.Context, u *Upstream, send func(pluginapi.ChatChunk) error) error {
	for {
		line, rerr := s.readLine()
		if rerr != nil && rerr != io.EOF {
			return u.readError(ctx, rerr, "stream")
		}
		if len(line) > 0 {
			if err := s.field(line, u, send); err != nil {
				if err == errDone {
					return nil
				}
				return err
			}
		}
		if rerr == io.EOF { // the upstream ended without [DONE]: flush the last event
			_, err := s.dispatch(u, send)
			return err
		}
		if len(line) == 0 {
			done, err := s.dispatch(u, send)
			if err != nil || done {
				return err
			}
		}
	}
}

// readLine returns the next line without its end: LF, CRLF or a lone CR,
// the three line ends of an event stream. The slice is valid until the
// next call.
func (s *sseStream) readLine() ([]byte, error) {
	if s.afterCR { // the last line ended with CR: an LF right after it is part of that end
		s.afterCR = false
		if b, err := s.br.Peek(1); err == nil && b[0] == '\n' {
			_, _ = s.br.Discard(1)
		}
	}
	s.long = s.long[:0]
	for {
		if _, err := s.br.Peek(1); err != nil { // nothing buffered, and nothing more to read
			if len(s.long) > 0 {
				return s.long, err
			}
			return nil, err
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		end := lineEnd(buf)
		if end < 0 { // the line goes on past what is buffered
			if int64(len(s.long)+len(buf)) > s.limit {
				return nil, errTooLarge
			}
			s.long = append(s.long, buf...)
			_, _ = s.br.Discard(len(buf))
			continue
		}
		n := end + 1
		if buf[end] == '\r' {
			if end+1 == len(buf) {
				s.afterCR = true // an LF may still come
			} else if buf[end+1] == '\n' {
				n++
			}
		}
		line := buf[:end]
		_, _ = s.br.Discard(n) // line stays valid: Discard does not overwrite the buffer
		if len(s.long) > 0 {
			line = append(s.long, line...)
			s.long = line
		}
		if int64(len(line)) > s.limit { // whether it came at once or in pieces
			return nil, errTooLarge
		}
		return line, nil
	}
}

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	head := b
	if lf >= 0 {
		head = b[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// field handles one non-empty line.
func (s *sseStream) field(line []byte, u *Upstream, send func(pluginapi.ChatChunk) error) error {
	if line[0] == ':' { // comment, keep-alive
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if s.lines == 1 && bytes.Equal(s.data, doneMarker) {
			s.done = true
			return errDone // [DONE] without the blank line after it
		}
		if s.lines > 0 {
			// Some servers omit the blank line between events: an object
			// or [DONE] after a complete object starts a new event. Only
			// the first line is checked, so this stays linear.
			if s.lines == 1 && (bytes.HasPrefix(value, []byte{'{'}) || bytes.Equal(value, doneMarker)) && json.Valid(s.data) {
				if _, err := s.dispatch(u, send); err != nil {
					return err
				}
			} else {
				s.data = append(s.data, '\n')
			}
		}
		if int64(len(s.data)+len(value)) > s.limit {
			return u.readError(context.Background(), errTooLarge, "stream event")
		}
		s.data = append(s.data, value...)
		s.lines++
	case "event":
		s.errEvent = string(value) == "error"
	}
	// id:, retry: and unknown fields are ignored.
	return nil
}

// dispatch ends the current event: [DONE] reports done, an error object
// becomes a *ProviderError, a chunk goes to send.
func (s *sseStream) dispatch(u *Upstream, send func(pluginapi.ChatChunk) error) (done bool, err error) {
	data := bytes.TrimSpace(s.data)
	errEvent := s.errEvent
	s.data, s.lines, s.errEvent = s.data[:0], 0, false
	if len(data) == 0 {
		return false, nil
	}
	s.events++
	if bytes.Equal(data, doneMarker) {
		s.done = true
		return true, nil
	}
	if errEvent {
		return false, u.streamError(parseErrorBody(data))
	}
	var c pluginapi.ChatChunk
	// Most chunks carry neither usage nor an error: skip decoding them.
	if hasNonNullKey(data, keyUsage) || hasNonNullKey(data, keyError) {
		var parsed struct {
			Choices []struct{}      `json:"choices"`
			Usage   *usageJSON      `json:"usage"`
			Error   json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(data, &parsed) // a member of an odd type only loses the usage
		if !isNull(parsed.Error) {
			return false, u.inBodyError(parsed.Error)
		}
		if parsed.Usage != nil {
			usage := parsed.Usage.usage()
			c.Usage = &usage
			c.UsageOnly = len(parsed.Choices) == 0
		}
	}
	s.finished = s.finished || hasNonNullKey(data, keyFinishReason)
	if c.Data, err = relayable(data); err != nil {
		return false, err
	}
	return false, send(c)
}

// errBadChunk ends a stream whose upstream sent an event of several data
// lines that is no JSON.
var errBadChunk = &pluginapi.ProviderError{Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
	Message: "provider sent a stream event that is not JSON"}

// relayable is a copy of an event's data that svc can send on as one
// event of its own: on one line (an event of several data lines has line
// ends between its tokens, which would end svc's event early and let the
// upstream write lines of its own into the client's stream; compacted, as
// JSON, or errBadChunk) and UTF-8. svc checks every chunk is JSON. send
// may keep the copy: data is reused.
func relayable(data []byte) ([]byte, error) {
	if bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, data) != nil {
			return nil, errBadChunk
		}
		data = b.Bytes()
	}
	return bytes.Clone(validUTF8(data)), nil
}

var (
	keyUsage   = []byte(`"usage"`)
	keyError   = []byte(`"error"`)
	keyChoices = []byte(`"choices"`)
	// keyFinishReason is in the chunk that ends a choice's answer.
	keyFinishReason = []byte(`"finish_reason"`)
	litNull         = []byte("null")
)

// hasNonNullKey reports whether data may have member key (quoted) with a
// value other than null. In valid JSON a quote inside a string is escaped,
// so `"usage"` followed by ':' is a member name; a false positive only
// costs a decode.
func hasNonNullKey(data, key []byte) bool {
	for {
		i := bytes.Index(data, key)
		if i < 0 {
			return false
		}
		data = data[i+len(key):]
		j := skipSpace(data, 0)
		if j < len(data) && data[j] == ':' {
			j = skipSpace(data, j+1)
			if !bytes.HasPrefix(data[j:], litNull) {
				return true
			}
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
