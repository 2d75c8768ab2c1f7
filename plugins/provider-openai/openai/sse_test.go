package openai

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func runSSE(t testing.TB, r io.Reader, limit int64) ([]pluginapi.ChatChunk, error) {
	var chunks []pluginapi.ChatChunk
	s := getSSE(r, limit)
	defer putSSE(s)
	err := s.run(context.Background(), &Upstream{APIKey: testKey}, func(c pluginapi.ChatChunk) error {
		chunks = append(chunks, c)
		return nil
	})
	return chunks, err
}

// oneByteReader hands out the stream a byte at a time, as a slow network
// might.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestSSEEdgeCases(t *testing.T) {
	long := `{"choices":[{"delta":{"content":"` + strings.Repeat("x", 3*sseBufferSize) + `"}}]}`
	cases := []struct {
		name   string
		stream string
		want   []string
	}{
		{"plain", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"CRLF", "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\r\n\r\n", []string{`{"a":1}`, `{"b":2}`}},
		{"CR", "data: {\"a\":1}\r\rdata: {\"b\":2}\r\rdata: [DONE]\r\r", []string{`{"a":1}`, `{"b":2}`}},
		{"mixed line ends", "data: {\"a\":\rdata: 1}\r\n\ndata: {\"b\":2}\n\r: ping\r\rdata: [DONE]\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"CR then a blank LF line", "data: {\"a\":1}\r\r\ndata: {\"b\":2}\r\n\r\n", []string{`{"a":1}`, `{"b":2}`}},
		{"comments and keep-alives", ": OPENROUTER PROCESSING\n\n:\n\ndata: {\"a\":1}\n: ping\n\ndata: [DONE]\n\n", []string{`{"a":1}`}},
		{"event, id and retry lines", "retry: 1000\n\nevent: message\nid: 7\ndata: {\"a\":1}\n\nevent: completion\ndata: {\"b\":2}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"multi-line data", "data: {\"a\":\ndata: 1,\ndata: \"b\":2}\n\ndata: [DONE]\n\n", []string{`{"a":1,"b":2}`}},
		{"not UTF-8", "data: {\"a\":\"x\xff\xfey\"}\n\ndata: [DONE]\n\n", []string{"{\"a\":\"x\uFFFDy\"}"}},
		{"no space after colon", "data:{\"a\":1}\n\ndata:[DONE]\n\n", []string{`{"a":1}`}},
		{"missing [DONE] with EOF", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"EOF without final newline", "data: {\"a\":1}\n\ndata: {\"b\":2}", []string{`{"a":1}`, `{"b":2}`}},
		{"missing blank line between events", "data: {\"a\":1}\ndata: {\"b\":2}\ndata: [DONE]\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"missing blank lines, then data after [DONE]", "data: {\"a\":1}\ndata: [DONE]\ndata: {\"b\":2}\n\n", []string{`{"a":1}`}},
		{"empty events skipped", "data:\n\ndata: \n\n\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`}},
		{"data after [DONE] ignored", "data: {\"a\":1}\n\ndata: [DONE]\n\ndata: {\"b\":2}\n\n", []string{`{"a":1}`}},
		{"line longer than the buffer", "data: " + long + "\n\ndata: [DONE]\n\n", []string{long}},
		{"empty stream", "", nil},
		{"only keep-alives", ": ping\n\n: ping\n\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, slow := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.stream)
				if slow {
					r = oneByteReader{r}
				}
				chunks, err := runSSE(t, r, DefaultMaxResponseBytes)
				require.NoError(t, err)
				assert.Equal(t, tc.want, nilIfEmpty(chunkData(chunks)), "slow=%v", slow)
			}
		})
	}
}

// An event of several data lines that is no JSON ends the stream as the
// upstream's fault: it cannot go on as one line. (svc checks that every
// chunk is JSON.)
func TestSSEBadEvents(t *testing.T) {
	for name, stream := range map[string]string{
		"a line of its own":  "data: {\"a\":1}\n\ndata: {\"b\":\ndata: 2}\ndata: injected\n\n",
		"two lines, no JSON": "data: {\"a\":1}\n\ndata: not\ndata: json\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			chunks, err := runSSE(t, strings.NewReader(stream), DefaultMaxResponseBytes)
			pe := requireProviderError(t, err)
			assert.Equal(t, 502, pe.Status)
			assert.Equal(t, codeBadResponse, pe.Code)
			assert.Equal(t, []string{`{"a":1}`}, chunkData(chunks))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestSSEEventTooLarge(t *testing.T) {
	for _, stream := range []string{
		"data: " + strings.Repeat("x", 200<<10) + "\n\n",                    // one long line
		strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", 200) + "\n", // many lines
	} {
		_, err := runSSE(t, strings.NewReader(stream), 100<<10)
		pe := requireProviderError(t, err)
		assert.Equal(t, codeTooLarge, pe.Code)
	}
}

// endlessLine is a line that never ends: "data: xxx…", with an error once
// more than budget bytes were read, so that a reader that does not stop
// at its limit fails with that error instead of running out of memory.
type endlessLine struct{ read, budget int }

func (e *endlessLine) Read(p []byte) (int, error) {
	if e.read > e.budget {
		return 0, errors.New("read on past the limit")
	}
	for i := range p {
		p[i] = 'x'
	}
	if e.read == 0 && len(p) >= 6 {
		copy(p, "data: ")
	}
	e.read += len(p)
	return len(p), nil
}

func TestSSELineWithoutEndStopsAtTheLimit(t *testing.T) {
	const limit = 100 << 10
	for _, slow := range []bool{false, true} {
		var r io.Reader = &endlessLine{budget: 4 * limit}
		if slow {
			r = oneByteReader{r}
		}
		_, err := runSSE(t, r, limit)
		pe := requireProviderError(t, err)
		assert.Equal(t, codeTooLarge, pe.Code, "slow=%v: %s", slow, pe.Message)
	}
}

func TestSSEChunkDataIsNotReused(t *testing.T) {
	chunks, err := runSSE(t, strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n"), DefaultMaxResponseBytes)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"a":1}`, `{"b":2}`}, chunkData(chunks), "earlier chunks must not be overwritten")
}

func TestSSEReadError(t *testing.T) {
	boom := errors.New("connection reset by peer")
	r := io.MultiReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b"), errReader{boom})
	chunks, err := runSSE(t, r, DefaultMaxResponseBytes)
	pe := requireProviderError(t, err)
	assert.Len(t, chunks, 1)
	assert.Contains(t, pe.Message, "connection reset by peer")
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestHasNonNullKey(t *testing.T) {
	cases := []struct {
		data string
		want bool
	}{
		{`{"choices":[]}`, false},
		{`{"usage":null}`, false},
		{`{"usage" : null ,"x":1}`, false},
		{`{"usage":{"prompt_tokens":1}}`, true},
		{`{"usage" :{}}`, true},
		{`{"choices":[{"delta":{"content":"usage"}}]}`, false},
		{`{"choices":[{"delta":{"content":"\"usage\": 1"}}]}`, false},
		{`{"choices":[{"delta":{"content":"usage"}}],"usage":null}`, false},
		{`{"choices":[{"delta":{"content":"usage"}}],"usage":{"total_tokens":3}}`, true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, hasNonNullKey([]byte(tc.data), keyUsage), tc.data)
	}
}

func BenchmarkSSE(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}],"usage":null}` + "\n\n")
	}
	sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":100,"total_tokens":105}}` + "\n\ndata: [DONE]\n\n")
	stream := sb.String()
	u := &Upstream{}
	send := func(pluginapi.ChatChunk) error { return nil }
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		s := getSSE(strings.NewReader(stream), DefaultMaxResponseBytes)
		if err := s.run(context.Background(), u, send); err != nil {
			b.Fatal(err)
		}
		putSSE(s)
	}
}

// FuzzSSE checks that no stream panics the reader, and that the three line
// ends of an event stream read alike, however the bytes arrive.
func FuzzSSE(f *testing.F) {
	for _, seed := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n",
		"data: {\"a\":\ndata: 1}\n: c\nid: 1\n\ndata: {\"usage\":{\"prompt_tokens\":1}}\n",
		"data: {\"a\":1}\ndata: {\"b\":2}\ndata: [DONE]\ndata: {}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		want, wantErr := runSSE(t, strings.NewReader(stream), 1<<10)
		if strings.Contains(stream, "\r") {
			return
		}
		for _, end := range []string{"\r\n", "\r"} {
			other := strings.ReplaceAll(stream, "\n", end)
			for _, slow := range []bool{false, true} {
				var r io.Reader = strings.NewReader(other)
				if slow {
					r = oneByteReader{r}
				}
				got, err := runSSE(t, r, 1<<10)
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("line end %q (slow %v): error %v, with LF %v", end, slow, err, wantErr)
				}
				if len(got) > 0 || len(want) > 0 {
					assert.Equal(t, chunkData(want), chunkData(got), "line end %q (slow %v)", end, slow)
				}
			}
		}
	})
}
