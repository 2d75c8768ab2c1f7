package mock

import (
	"context"
	"strconv"
	"unicode/utf8"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The wire shapes are written by hand with append: they are small, fixed,
// and this keeps the mock cheap in gateway benchmarks.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD; control characters, U+2028 and U+2029 are escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendUsage(dst []byte, u pluginapi.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.CompletionTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.TotalTokens, 10)
	return append(dst, '}')
}

// head appends the fields every object of the answer starts with.
func (a *answer) head(dst []byte, object string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, a.id)
	dst = append(dst, `,"object":"`...)
	dst = append(dst, object...)
	dst = append(dst, `","created":`...)
	dst = strconv.AppendInt(dst, a.created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendJSONString(dst, a.model)
	return append(dst, `,"system_fingerprint":"mock"`...)
}

// completion is the chat.completion JSON.
func (a *answer) completion() []byte {
	size := 256 + len(a.model)
	for i := range a.choices {
		size += 128 + len(a.choices[i].content)
	}
	dst := a.head(make([]byte, 0, size), "chat.completion")
	dst = append(dst, `,"choices":[`...)
	for i := range a.choices {
		ch := &a.choices[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"message":{"role":"assistant","content":`...)
		if ch.tool != nil {
			dst = append(dst, `null,"refusal":null,"tool_calls":[{"id":`...)
			dst = appendJSONString(dst, ch.tool.id)
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = appendJSONString(dst, ch.tool.name)
			dst = append(dst, `,"arguments":`...)
			dst = appendJSONString(dst, ch.tool.args)
			dst = append(dst, `}}]`...)
		} else {
			dst = appendJSONString(dst, ch.content)
			dst = append(dst, `,"refusal":null`...)
		}
		dst = append(dst, `},"logprobs":null,"finish_reason":`...)
		dst = appendJSONString(dst, ch.finish)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"usage":`...)
	dst = appendUsage(dst, a.usage)
	return append(dst, '}')
}

// Streamed pieces: about three words, at most streamPieceBytes bytes of a
// word-free run such as compact JSON, and argument fragments of
// argsPieceBytes.
const (
	streamPieceWords = 3
	streamPieceBytes = 24
	argsPieceBytes   = 16
)

// nextPiece returns the length of the next streamed piece of s: up to
// streamPieceWords words, each with the white space before it; a long run
// without white space is cut every streamPieceBytes bytes.
func nextPiece(s string) int {
	i, words := 0, 0
	for i < len(s) && words < streamPieceWords {
		j := i
		for j < len(s) && isSpaceByte(s[j]) {
			j++
		}
		k := j
		for k < len(s) && !isSpaceByte(s[k]) {
			k++
		}
		if k-i > streamPieceBytes {
			if i > 0 {
				return i
			}
			return runeCut(s, streamPieceBytes)
		}
		i = k
		words++
	}
	return i
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// runeCut returns n, moved back to a rune boundary of s (at least 1 rune).
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 {
		_, size := utf8.DecodeRuneInString(s)
		return size
	}
	return n
}

// stream sends the answer as chat.completion.chunk objects, choice after
// choice, each chunk naming its choice's index: the role, the content (or
// the tool call) in pieces, the finish reason; then, with includeUsage, a
// usage-only chunk.
func (a *answer) stream(ctx context.Context, includeUsage bool, send func(pluginapi.ChatChunk) error) error {
	prefix := a.head(make([]byte, 0, 160), "chat.completion.chunk")
	var index []byte
	emit := func(delta []byte, finish string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := make([]byte, 0, len(prefix)+len(delta)+96)
		b = append(b, prefix...)
		b = append(b, `,"choices":[{"index":`...)
		b = append(b, index...)
		b = append(b, `,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, finish)
		}
		b = append(b, `}]`...)
		if includeUsage {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, '}')
		return send(pluginapi.ChatChunk{Data: b})
	}
	var scratch []byte
	for i := range a.choices {
		ch := &a.choices[i]
		index = strconv.AppendInt(index[:0], int64(i), 10)
		if ch.tool != nil {
			if err := emit([]byte(`{"role":"assistant","content":null}`), ""); err != nil {
				return err
			}
			scratch = append(scratch[:0], `{"tool_calls":[{"index":0,"id":`...)
			scratch = appendJSONString(scratch, ch.tool.id)
			scratch = append(scratch, `,"type":"function","function":{"name":`...)
			scratch = appendJSONString(scratch, ch.tool.name)
			scratch = append(scratch, `,"arguments":""}}]}`...)
			if err := emit(scratch, ""); err != nil {
				return err
			}
			for rest := ch.tool.args; rest != ""; {
				n := runeCut(rest, argsPieceBytes)
				scratch = append(scratch[:0], `{"tool_calls":[{"index":0,"function":{"arguments":`...)
				scratch = appendJSONString(scratch, rest[:n])
				scratch = append(scratch, `}}]}`...)
				if err := emit(scratch, ""); err != nil {
					return err
				}
				rest = rest[n:]
			}
		} else {
			if err := emit([]byte(`{"role":"assistant","content":""}`), ""); err != nil {
				return err
			}
			for rest := ch.content; rest != ""; {
				n := nextPiece(rest)
				scratch = append(scratch[:0], `{"content":`...)
				scratch = appendJSONString(scratch, rest[:n])
				scratch = append(scratch, '}')
				if err := emit(scratch, ""); err != nil {
					return err
				}
				rest = rest[n:]
			}
		}
		if err := emit([]byte(`{}`), ch.finish); err != nil {
			return err
		}
	}
	if !includeUsage {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b := make([]byte, 0, len(prefix)+96)
	b = append(b, prefix...)
	b = append(b, `,"choices":[],"usage":`...)
	b = appendUsage(b, a.usage)
	b = append(b, '}')
	u := a.usage
	return send(pluginapi.ChatChunk{Data: b, Usage: &u, UsageOnly: true})
}
