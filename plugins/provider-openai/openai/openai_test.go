package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

// newFake starts an OpenAI-compatible fake upstream on 127.0.0.1 only.
// configure, if given, runs before the server starts.
func newFake(t testing.TB, h http.HandlerFunc, configure ...func(*httptest.Server)) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Read the request body first, as a real upstream does: only then does
	// net/http watch the connection and cancel r.Context() when the client
	// goes away.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	for _, c := range configure {
		c(srv)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections() // ends handlers that block until the client goes away
		srv.Close()
	})
	return srv
}

// neverClosed is a channel for handlers that block until the client goes
// away (the server's cleanup closes every connection).
func neverClosed() chan struct{} { return make(chan struct{}) }

func chatReq(body string) pluginapi.ChatRequest {
	return pluginapi.ChatRequest{Body: []byte(body), Model: "gpt-test", RequestID: "run_123"}
}

const simpleBody = `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`

func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// modes runs f with the Upstream of baseURL and testKey in both of the
// modes svc runs a provider in: in its process, and as a plugin.
func modes(t *testing.T, baseURL string, f func(t *testing.T, p pluginapi.Provider)) {
	t.Helper()
	providertest.Modes(t, newUpstream(baseURL, testKey), f)
}

func collect(t *testing.T, p pluginapi.Provider, req pluginapi.ChatRequest) ([]pluginapi.ChatChunk, error) {
	t.Helper()
	var chunks []pluginapi.ChatChunk
	err := p.StreamChat(context.Background(), req, func(c pluginapi.ChatChunk) error {
		chunks = append(chunks, c)
		return nil
	})
	return chunks, err
}

func chunkData(chunks []pluginapi.ChatChunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = string(c.Data)
	}
	return out
}

func requireProviderError(t *testing.T, err error) *pluginapi.ProviderError {
	t.Helper()
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	return pe
}

// ---- Chat ----

func TestChatPassesBodyAndHeadersThrough(t *testing.T) {
	// Unknown fields, odd spacing, HTML characters and escapes must reach
	// the upstream byte for byte.
	reqBody := `{"model":"gpt-test",  "messages":[{"role":"user","content":"a<b & c>d \u00e9 é \"q\""}],` +
		`"stream":false,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
		`"tool_choice":"auto","max_tokens":5,"top_p":0.50,"stop":["\n"],"seed":42,"user":"u1",` +
		`"response_format":{"type":"json_object"},"x_vendor_unknown":{"n":1e2,"l":[1.0,null]}}`
	respBody := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",` +
		`"content":"hi <there>"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,` +
		`"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0}},"x_extra":true}` + "\n"

	var got struct {
		method, path string
		header       http.Header
		body         []byte
	}
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path, got.header = r.Method, r.URL.Path, r.Header.Clone()
		got.body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, respBody)
	})

	modes(t, srv.URL+"/v1/", func(t *testing.T, p pluginapi.Provider) { // trailing slash tolerated
		res, err := p.Chat(context.Background(), chatReq(reqBody))
		require.NoError(t, err)

		assert.Equal(t, http.MethodPost, got.method)
		assert.Equal(t, "/v1/chat/completions", got.path)
		assert.Equal(t, []byte(reqBody), got.body, "body must be passed through byte for byte")
		assert.Equal(t, "Bearer "+testKey, got.header.Get("Authorization"))
		assert.Equal(t, "application/json", got.header.Get("Content-Type"))
		assert.Equal(t, "application/json", got.header.Get("Accept"))
		assert.Equal(t, "svc-provider-openai", got.header.Get("User-Agent"))
		assert.Equal(t, "run_123", got.header.Get("X-Request-Id"))

		assert.Equal(t, []byte(respBody), res.Body, "response body must come back unchanged")
		assert.Equal(t, pluginapi.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}, res.Usage)
	})
}

func TestChatWithoutRequestIDSendsNoHeader(t *testing.T) {
	var header http.Header
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		io.WriteString(w, `{"choices":[]}`)
	})
	req := chatReq(simpleBody)
	req.RequestID = ""
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), req)
		require.NoError(t, err)
		_, present := header["X-Request-Id"]
		assert.False(t, present)
	})
}

// The W3C trace context of the call reaches the upstream as its headers,
// for chat, streams and embeddings, in process and across the plugin
// connection (whose per-call message carries it).
func TestTraceContextReachesTheUpstream(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var headers []http.Header
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		headers = append(headers, r.Header.Clone())
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			io.WriteString(w, `{"object":"list","data":[],"model":"e"}`)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			writeSSE(w, "data: {\"choices\":[]}\n\n", "data: [DONE]\n\n")
			return
		}
		io.WriteString(w, `{"choices":[]}`)
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		headers = nil
		req := chatReq(simpleBody)
		req.TraceParent, req.TraceState = tp, "vendor=abc"
		_, err := p.Chat(context.Background(), req)
		require.NoError(t, err)
		_, err = collect(t, p, req)
		require.NoError(t, err)
		_, err = p.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{
			Body: []byte(`{"model":"e","input":"x"}`), Model: "e", TraceParent: tp, TraceState: "vendor=abc"})
		require.NoError(t, err)
		require.Len(t, headers, 3)
		for _, h := range headers {
			assert.Equal(t, tp, h.Get("Traceparent"))
			assert.Equal(t, "vendor=abc", h.Get("Tracestate"))
		}

		headers = nil
		_, err = p.Chat(context.Background(), chatReq(simpleBody))
		require.NoError(t, err)
		require.Len(t, headers, 1)
		_, present := headers[0]["Traceparent"]
		assert.False(t, present, "no trace context, no header")
	})
}

func TestChatUsageParsing(t *testing.T) {
	cases := []struct {
		name string
		body string
		want pluginapi.Usage
	}{
		{"absent", `{"choices":[]}`, pluginapi.Usage{}},
		{"null", `{"choices":[],"usage":null}`, pluginapi.Usage{}},
		{"ints", `{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, pluginapi.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"floats", `{"usage":{"prompt_tokens":3.0,"completion_tokens":4e0,"total_tokens":7}}`, pluginapi.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"total computed", `{"usage":{"prompt_tokens":3,"completion_tokens":4}}`, pluginapi.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"input/output names", `{"usage":{"input_tokens":5,"output_tokens":6}}`, pluginapi.Usage{PromptTokens: 5, CompletionTokens: 6, TotalTokens: 11}},
		{"cached prompt tokens", `{"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}`,
			pluginapi.Usage{PromptTokens: 2006, CompletionTokens: 300, TotalTokens: 2306, CachedPromptTokens: 1920}},
		{"cache writes, as Anthropic-compatible servers report them", `{"usage":{"prompt_tokens":100,"completion_tokens":1,"cache_creation_input_tokens":60,"prompt_tokens_details":{"cached_tokens":30}}}`,
			pluginapi.Usage{PromptTokens: 100, CompletionTokens: 1, TotalTokens: 101, CachedPromptTokens: 30, CacheWriteTokens: 60}},
		{"cache counts past the prompt are cut to it", `{"usage":{"prompt_tokens":10,"completion_tokens":1,"cache_creation_input_tokens":60,"prompt_tokens_details":{"cached_tokens":8}}}`,
			pluginapi.Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11, CachedPromptTokens: 8, CacheWriteTokens: 2}},
		{"usage before choices", `{"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"choices":[{"message":{"content":"\"usage\": 9"}}]}`, pluginapi.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		{"odd types ignored", `{"usage":{"prompt_tokens":"x"}}`, pluginapi.Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.body) })
			modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
				res, err := p.Chat(context.Background(), chatReq(simpleBody))
				require.NoError(t, err)
				assert.Equal(t, tc.want, res.Usage)
				assert.Equal(t, tc.body, string(res.Body))
			})
		})
	}
}

func TestChatResponseSizeBound(t *testing.T) {
	big := `{"x":"` + strings.Repeat("a", 4096) + `"}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if chunked {
					w.(http.Flusher).Flush() // no Content-Length
				}
				io.WriteString(w, big)
			})
			small := newUpstream(srv.URL, testKey)
			small.MaxResponseBytes = 1024
			providertest.Modes(t, small, func(t *testing.T, p pluginapi.Provider) {
				_, err := p.Chat(context.Background(), chatReq(simpleBody))
				pe := requireProviderError(t, err)
				assert.Equal(t, http.StatusBadGateway, pe.Status)
				assert.Equal(t, codeTooLarge, pe.Code)
			})

			exact := newUpstream(srv.URL, testKey)
			exact.MaxResponseBytes = int64(len(big)) // exactly at the limit is fine
			providertest.Modes(t, exact, func(t *testing.T, p pluginapi.Provider) {
				res, err := p.Chat(context.Background(), chatReq(simpleBody))
				require.NoError(t, err)
				assert.Equal(t, big, string(res.Body))
			})
		})
	}
}

func TestChatBadSuccessBodies(t *testing.T) {
	t.Run("not JSON", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>oops</html>") })
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Chat(context.Background(), chatReq(simpleBody))
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Equal(t, codeBadResponse, pe.Code)
		})
	})
	t.Run("JSON but not an object", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `["x"]`) })
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Chat(context.Background(), chatReq(simpleBody))
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Equal(t, codeBadResponse, pe.Code)
		})
	})
	t.Run("not UTF-8", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"bad \xff\xfe(\"}}]}")
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			res, err := p.Chat(context.Background(), chatReq(simpleBody))
			require.NoError(t, err)
			assert.Equal(t, "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"bad \uFFFD(\"}}]}", string(res.Body))
		})
	})
	t.Run("error object with 200", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"error":{"message":"engine overloaded","type":"server_error","code":null}}`)
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Chat(context.Background(), chatReq(simpleBody))
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Equal(t, "server_error", pe.Type)
			assert.Contains(t, pe.Message, "engine overloaded")
		})
	})
}

// ---- errors ----

type errCase struct {
	name        string
	status      int
	contentType string
	body        string
	want        pluginapi.ProviderError // Message is checked with contains
	notContains []string
	maxLen      int
}

var errorCases = []errCase{
	{
		name: "400 error object", status: 400,
		body: `{"error":{"message":"Invalid value for 'temperature': must be <= 2","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
		want: pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: "temperature", Message: "Invalid value for 'temperature': must be <= 2"},
	},
	{
		name: "404 model_not_found", status: 404,
		body: `{"error":{"message":"The model ` + "`nope`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		want: pluginapi.ProviderError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Message: "does not exist"},
	},
	{
		name: "400 numeric code", status: 400,
		body: `{"error":{"message":"bad","type":"invalid_request_error","code":1234,"param":null}}`,
		want: pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: "1234", Message: "bad"},
	},
	{
		name: "400 error as string", status: 400,
		body: `{"error":"context too long"}`,
		want: pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Message: "context too long"},
	},
	{
		name: "422 FastAPI detail", status: 422,
		body: `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`,
		want: pluginapi.ProviderError{Status: 422, Type: "invalid_request_error", Message: "field required"},
	},
	{
		name: "400 empty body", status: 400, body: ``,
		want: pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Message: "Bad Request"},
	},
	{
		name: "400 message echoes the key", status: 400,
		body: `{"error":{"message":"bad header Bearer ` + testKey + `","type":"invalid_request_error"}}`,
		want: pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Message: "bad header Bearer [REDACTED]"},
	},
	{
		name: "400 message cut inside the key", status: 400,
		body:        `{"error":{"message":"` + strings.Repeat("x", maxMessageBytes-6) + testKey + `","type":"invalid_request_error"}}`,
		want:        pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Message: "xxx[REDACTED]…"},
		notContains: []string{"sk-"},
	},
	{
		name: "500 text body cut inside the key", status: 500, contentType: "text/plain",
		body:        strings.Repeat("y", errorSnippetBytes-3) + testKey,
		want:        pluginapi.ProviderError{Status: 500, Type: "upstream_error", Message: "yyy[REDACTED]…"},
		notContains: []string{"sk-"},
	},
	{
		name: "401 becomes 502 without the key", status: 401,
		body:        `{"error":{"message":"Incorrect API key provided: sk-test-****cdef. Full: ` + testKey + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		want:        pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: codeAuth, Message: "provider rejected svc's credentials"},
		notContains: []string{"Incorrect API key", "cdef"},
	},
	{
		name: "403 becomes 502", status: 403, body: `{"error":{"message":"Project does not have access","type":"permission_error"}}`,
		want:        pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: codeAuth, Message: "provider rejected svc's credentials"},
		notContains: []string{"Project does not have access"},
	},
	{
		name: "429 stays 429", status: 429,
		body: `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		want: pluginapi.ProviderError{Status: 429, Type: "requests", Code: "rate_limit_exceeded", Message: "Rate limit reached"},
	},
	{
		name: "429 without body", status: 429, body: ``,
		want: pluginapi.ProviderError{Status: 429, Type: "rate_limit_error", Message: "rate limit"},
	},
	{
		name: "500 keeps its status with upstream message", status: 500,
		body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
		want: pluginapi.ProviderError{Status: 500, Type: "upstream_error", Message: "provider error (HTTP 500): The server had an error"},
	},
	{
		name: "503 non-JSON body", status: 503, contentType: "text/html",
		body:   "<html><body><h1>503 Service Temporarily Unavailable</h1>" + strings.Repeat("x", 2000) + "</body></html>",
		want:   pluginapi.ProviderError{Status: 503, Type: "upstream_error", Message: "503 Service Temporarily Unavailable"},
		maxLen: 600,
	},
	{
		name: "502 plain text", status: 502, contentType: "text/plain", body: "Bad Gateway\n",
		want: pluginapi.ProviderError{Status: 502, Type: "upstream_error", Message: "provider error (HTTP 502): Bad Gateway"},
	},
	{
		name: "302 redirect is not followed", status: 302, body: ``,
		want: pluginapi.ProviderError{Status: 502, Type: "upstream_error", Message: "HTTP 302"},
	},
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestErrorMapping(t *testing.T) {
	logs := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace, JSONFormat: true})
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else if tc.body != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			u := newUpstream(srv.URL, testKey)
			u.Logger = logger
			check := func(t *testing.T, err error) {
				pe := requireProviderError(t, err)
				assert.Equal(t, tc.want.Status, pe.Status)
				assert.Equal(t, tc.want.Type, pe.Type)
				assert.Equal(t, tc.want.Code, pe.Code)
				assert.Equal(t, tc.want.Param, pe.Param)
				assert.Contains(t, pe.Message, tc.want.Message)
				for _, s := range append([]string{testKey}, tc.notContains...) {
					assert.NotContains(t, pe.Error(), s)
					assert.NotContains(t, fmt.Sprintf("%+v", *pe), s)
				}
				if tc.maxLen > 0 {
					assert.LessOrEqual(t, len(pe.Message), tc.maxLen)
				}
			}
			providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
				t.Run("Chat", func(t *testing.T) {
					_, err := p.Chat(context.Background(), chatReq(simpleBody))
					check(t, err)
				})
				t.Run("StreamChat", func(t *testing.T) {
					chunks, err := collect(t, p, chatReq(simpleBody))
					check(t, err)
					assert.Empty(t, chunks)
				})
			})
		})
	}
	assert.NotEmpty(t, logs.String())
	assert.NotContains(t, logs.String(), testKey, "the API key must never be logged")
}

// An answer svc tries again (a 429, a 5xx) carries the upstream's wait
// (pluginapi.RetryAfter reads it), a caller's 4xx does not, whatever the
// upstream's headers say.
func TestRetriedAnswersKeepTheUpstreamsRetryAfter(t *testing.T) {
	for status, want := range map[int]time.Duration{429: 3 * time.Second, 503: 3 * time.Second, 500: 3 * time.Second, 400: 0} {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(status)
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Chat(context.Background(), chatReq(simpleBody))
			assert.Equal(t, want, requireProviderError(t, err).RetryAfter, "Chat, HTTP %d", status)
			_, err = collect(t, p, chatReq(simpleBody))
			assert.Equal(t, want, requireProviderError(t, err).RetryAfter, "StreamChat, HTTP %d", status)
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	u := newUpstream(srv.URL, testKey)
	u.Client = &http.Client{Timeout: 100 * time.Millisecond}

	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		for name, call := range map[string]func() error{
			"Chat": func() error { _, err := p.Chat(context.Background(), chatReq(simpleBody)); return err },
			"StreamChat": func() error {
				return p.StreamChat(context.Background(), chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil })
			},
			"Models": func() error { _, err := p.Models(context.Background()); return err },
		} {
			t.Run(name, func(t *testing.T) {
				start := time.Now()
				err := call()
				pe := requireProviderError(t, err)
				assert.Equal(t, http.StatusBadGateway, pe.Status)
				assert.Equal(t, "upstream_error", pe.Type)
				assert.Equal(t, codeTimeout, pe.Code)
				assert.Equal(t, "provider timed out", pe.Message)
				assert.Less(t, time.Since(start), 5*time.Second)
			})
		}
	})
}

func TestStreamTimeoutWaitingForHeaders(t *testing.T) {
	release := neverClosed()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	u := newUpstream(srv.URL, testKey)
	u.Client.Transport.(*pluginapi.UpstreamTransport).ResponseHeaderTimeout = 100 * time.Millisecond
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		err := p.StreamChat(context.Background(), chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil })
		pe := requireProviderError(t, err)
		assert.Equal(t, "provider timed out", pe.Message)
	})
}

func TestContextDeadlineIsATimeout(t *testing.T) {
	release := neverClosed()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := p.Chat(ctx, chatReq(simpleBody))
		requireTimeout(t, err)
	})
}

// requireTimeout checks that err is a call's timeout. The caller's own
// deadline is a 502 upstream_timeout from the provider; over a plugin
// connection, where svc's side of the call ends at the same deadline,
// either that or context.DeadlineExceeded, whichever comes first.
func requireTimeout(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		return
	}
	pe := requireProviderError(t, err)
	assert.Equal(t, http.StatusBadGateway, pe.Status)
	assert.Equal(t, codeTimeout, pe.Code)
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	u := newUpstream("http://"+addr+"/v1", testKey)
	check := func(t *testing.T, err error) {
		pe := requireProviderError(t, err)
		assert.Equal(t, http.StatusBadGateway, pe.Status)
		assert.Equal(t, "upstream_error", pe.Type)
		assert.Equal(t, codeUnreachable, pe.Code)
		assert.True(t, strings.HasPrefix(pe.Message, "provider unreachable: "), pe.Message)
		assert.Contains(t, pe.Message, "refused")
		assert.NotContains(t, pe.Message, "/chat/completions", "the provider URL is not repeated")
		assert.NotContains(t, pe.Error(), testKey)
	}
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), chatReq(simpleBody))
		check(t, err)
		check(t, p.StreamChat(context.Background(), chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil }))
		_, err = p.Models(context.Background())
		check(t, err)
	})
}

func TestSanitize(t *testing.T) {
	u := &Upstream{APIKey: testKey}
	assert.Equal(t, "a [REDACTED] b [REDACTED]", u.sanitize("a "+testKey+" b "+testKey))
	assert.Equal(t, "nothing", u.sanitize("nothing"))
	assert.Equal(t, "no key set", (&Upstream{}).sanitize("no key set"))

	err := u.transportError(context.Background(), errors.New("dial failed for "+testKey))
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), pluginapi.Redacted)
}

// ---- cancellation ----

func TestChatCancellationReachesUpstream(t *testing.T) {
	var arrived, upstreamDone chan struct{} // each mode's, made before its call
	release := neverClosed()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-r.Context().Done():
			close(upstreamDone)
		case <-release:
		}
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		arrived, upstreamDone = make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-arrived; cancel() }()

		_, err := p.Chat(ctx, chatReq(simpleBody))
		require.ErrorIs(t, err, context.Canceled)
		select {
		case <-upstreamDone:
		case <-time.After(2 * time.Second):
			t.Fatal("the upstream request was not cancelled")
		}
	})
}

func TestStreamCancellationReachesUpstream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first bool // the upstream sends a chunk before blocking
	}{{"before headers", false}, {"mid-stream", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var arrived, upstreamDone chan struct{} // each mode's, made before its call
			release := neverClosed()
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.first {
					writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
				}
				close(arrived)
				select {
				case <-r.Context().Done():
					close(upstreamDone)
				case <-release:
				}
			})
			modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
				arrived, upstreamDone = make(chan struct{}), make(chan struct{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { <-arrived; cancel() }()

				err := p.StreamChat(ctx, chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil })
				require.ErrorIs(t, err, context.Canceled)
				select {
				case <-upstreamDone:
				case <-time.After(2 * time.Second):
					t.Fatal("the upstream request was not cancelled")
				}
			})
		})
	}
}

func TestStreamSendErrorStops(t *testing.T) {
	var upstreamDone chan struct{} // each mode's, made before its call
	release := neverClosed()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		select {
		case <-r.Context().Done():
			close(upstreamDone)
		case <-release:
		}
	})
	gone := errors.New("client went away")
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		upstreamDone = make(chan struct{})
		calls := 0
		err := p.StreamChat(context.Background(), chatReq(simpleBody), func(pluginapi.ChatChunk) error {
			calls++
			return gone
		})
		require.ErrorIs(t, err, gone)
		assert.Equal(t, 1, calls)
		select {
		case <-upstreamDone:
		case <-time.After(2 * time.Second):
			t.Fatal("the upstream connection was not released")
		}
	})
}

// ---- keep-alive ----

func TestConnectionReuse(t *testing.T) {
	var newConns atomic.Int32
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"m1","object":"model","owned_by":"me","created":1}]}`)
		case r.Header.Get("X-Request-Id") == "fail":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"nope","type":"invalid_request_error"}}`+strings.Repeat(" ", 8000))
		case r.Header.Get("X-Request-Id") == "big":
			w.(http.Flusher).Flush() // chunked, unknown length
			io.WriteString(w, `{"choices":[],"pad":"`+strings.Repeat("p", 200<<10)+`"}`)
		case bytes.Contains(body, []byte(`"stream":true`)):
			writeSSE(w,
				"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\n",
				"data: [DONE]\n\n")
		default:
			io.WriteString(w, `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		}
	}, func(s *httptest.Server) {
		s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				newConns.Add(1)
			}
		}
	})
	// One Upstream in both modes: the plugin's calls go on over the
	// connection the in-process calls opened.
	providertest.Modes(t, newUpstream(srv.URL, testKey), func(t *testing.T, p pluginapi.Provider) {
		ctx := context.Background()
		noop := func(pluginapi.ChatChunk) error { return nil }
		withID := func(id string, usage bool) pluginapi.ChatRequest {
			req := chatReq(simpleBody)
			req.RequestID, req.IncludeUsage = id, usage
			return req
		}
		type step struct {
			name    string
			call    func() error
			wantErr bool
		}
		var steps []step
		add := func(n int, s step) {
			for range n {
				steps = append(steps, s)
			}
		}
		add(10, step{"chat", func() error { _, err := p.Chat(ctx, withID("ok", false)); return err }, false})
		add(3, step{"chat 400", func() error { _, err := p.Chat(ctx, withID("fail", false)); return err }, true})
		add(3, step{"stream 400", func() error { return p.StreamChat(ctx, withID("fail", false), noop) }, true})
		add(2, step{"chat, chunked 200 KiB", func() error { _, err := p.Chat(ctx, withID("big", false)); return err }, false})
		add(5, step{"stream", func() error {
			chunks, err := collect(t, p, withID("ok", true))
			if err == nil && len(chunks) != 2 {
				err = fmt.Errorf("got %d chunks", len(chunks))
			}
			return err
		}, false})
		add(2, step{"models", func() error { _, err := p.Models(ctx); return err }, false})
		add(2, step{"chat again", func() error { _, err := p.Chat(ctx, withID("ok", false)); return err }, false})

		for i, s := range steps {
			err := s.call()
			if s.wantErr {
				require.Error(t, err, "call %d (%s)", i, s.name)
			} else {
				require.NoError(t, err, "call %d (%s)", i, s.name)
			}
			require.Equal(t, int32(1), newConns.Load(), "call %d (%s) opened a new connection: sequential calls must reuse one", i, s.name)
		}
	})
}

func TestNewClientIsTuned(t *testing.T) {
	u := newUpstream("https://example.invalid/v1", testKey)
	require.NotNil(t, u.Client)
	assert.Zero(t, u.Client.Timeout, "an overall timeout would cut streams")
	tr, ok := u.Client.Transport.(*pluginapi.UpstreamTransport)
	require.True(t, ok)
	assert.NotNil(t, tr.Dialer)
	assert.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 100)
	assert.Equal(t, 90*time.Second, tr.IdleConnTimeout)
	assert.Equal(t, 10*time.Second, tr.TLSHandshakeTimeout)
	assert.Equal(t, 10*time.Minute, tr.ResponseHeaderTimeout, "a non-streamed answer may take minutes")
	// Proxied requests take net/http's Transport, under the same bounds.
	fb := tr.Fallback
	require.NotNil(t, fb)
	assert.NotNil(t, fb.Proxy)
	assert.NotNil(t, fb.DialContext)
	assert.True(t, fb.ForceAttemptHTTP2)
	assert.GreaterOrEqual(t, fb.MaxIdleConnsPerHost, 100)
	assert.Equal(t, 90*time.Second, fb.IdleConnTimeout)
	assert.Equal(t, 10*time.Second, fb.TLSHandshakeTimeout)
	assert.Equal(t, 10*time.Minute, fb.ResponseHeaderTimeout)
}

// ---- Models ----

func TestModels(t *testing.T) {
	var header http.Header
	var method, path string
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		header, method, path = r.Header.Clone(), r.Method, r.URL.Path
		io.WriteString(w, `{"object":"list","data":[`+
			`{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"},`+
			`{"id":"local","object":"model","owned_by":"me"},`+
			`{"id":"","object":"model"},`+
			`{"id":"float","created":1.7e9,"owned_by":"x"}]}`)
	})
	modes(t, srv.URL+"/v1", func(t *testing.T, p pluginapi.Provider) {
		models, err := p.Models(context.Background())
		require.NoError(t, err)
		assert.Equal(t, http.MethodGet, method)
		assert.Equal(t, "/v1/models", path)
		assert.Equal(t, "Bearer "+testKey, header.Get("Authorization"))
		assert.Equal(t, []pluginapi.Model{
			{ID: "gpt-4o", OwnedBy: "system", Created: 1715367049, Kind: pluginapi.KindChat},
			{ID: "local", OwnedBy: "me", Kind: pluginapi.KindChat},
			{ID: "float", OwnedBy: "x", Created: 1700000000, Kind: pluginapi.KindChat},
		}, models)
	})
}

func TestModelsErrors(t *testing.T) {
	t.Run("401", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"bad key `+testKey+`"}}`)
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Models(context.Background())
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.NotContains(t, pe.Error(), testKey)
		})
	})
	t.Run("invalid JSON", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"data":`) })
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := p.Models(context.Background())
			pe := requireProviderError(t, err)
			assert.Equal(t, codeBadResponse, pe.Code)
		})
	})
}

// ---- request rewrite ----

func TestStreamRequestBody(t *testing.T) {
	const messages = `[{"role":"user","content":"a<b & c>d \u00e9 é"}]`
	const unknown = `{"n": 1e2, "l":[1.0 ,null]}`
	cases := []struct {
		name         string
		body         string
		includeUsage bool
		wantOptions  map[string]any // nil: stream_options must be as sent (or absent)
	}{
		{"merge with client stream_options", `{"model":"m","messages":` + messages + `,"stream":false,"stream_options":{"foo":"bar","include_usage":false},"x_unknown":` + unknown + `}`, true,
			map[string]any{"foo": "bar", "include_usage": true}},
		{"add stream_options", `{"model":"m","messages":` + messages + `,"x_unknown":` + unknown + `}`, true,
			map[string]any{"include_usage": true}},
		{"null stream_options replaced", `{"model":"m","messages":` + messages + `,"stream_options":null,"x_unknown":` + unknown + `}`, true,
			map[string]any{"include_usage": true}},
		{"no usage requested keeps stream_options", `{"model":"m","messages":` + messages + `,"stream":true,"stream_options":{"foo" : 1},"x_unknown":` + unknown + `}`, false, nil},
		{"no usage requested, none sent", `{"model":"m","messages":` + messages + `,"x_unknown":` + unknown + `}`, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := streamRequestBody([]byte(tc.body), tc.includeUsage)
			require.NoError(t, err)
			var in, got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tc.body), &in))
			require.NoError(t, json.Unmarshal(out, &got))

			assert.Equal(t, "true", string(got["stream"]))
			if tc.wantOptions != nil {
				var opts map[string]any
				require.NoError(t, json.Unmarshal(got["stream_options"], &opts))
				want, _ := json.Marshal(tc.wantOptions)
				have, _ := json.Marshal(opts)
				assert.JSONEq(t, string(want), string(have))
			} else {
				assert.Equal(t, string(in["stream_options"]), string(got["stream_options"]))
			}
			for k, v := range in {
				if k == "stream" || k == "stream_options" {
					continue
				}
				assert.Equal(t, string(v), string(got[k]), "field %s must keep its exact bytes", k)
			}
			assert.Contains(t, string(out), `a<b & c>d \u00e9 é`, "no HTML escaping, no re-encoding")
			assert.Contains(t, string(out), unknown)
		})
	}
	for _, bad := range []string{`null`, `[]`, `"x"`, `{`, ``} {
		_, err := streamRequestBody([]byte(bad), true)
		assert.Error(t, err, "body %q", bad)
	}
}

func TestStreamChatRequest(t *testing.T) {
	var got struct {
		header http.Header
		body   []byte
	}
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		got.header = r.Header.Clone()
		got.body, _ = io.ReadAll(r.Body)
		writeSSE(w, "data: [DONE]\n\n")
	})
	req := chatReq(`{"model":"m","messages":[],"stream":true,"stream_options":{"continuous_usage_stats":false},"seed":7}`)
	req.IncludeUsage = true
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		_, err := collect(t, p, req)
		require.NoError(t, err)
		assert.Equal(t, "Bearer "+testKey, got.header.Get("Authorization"))
		assert.Equal(t, "application/json", got.header.Get("Content-Type"))
		assert.Equal(t, "text/event-stream", got.header.Get("Accept"))
		assert.Equal(t, "run_123", got.header.Get("X-Request-Id"))
		assert.JSONEq(t, `{"model":"m","messages":[],"stream":true,"stream_options":{"continuous_usage_stats":false,"include_usage":true},"seed":7}`, string(got.body))

		t.Run("invalid body", func(t *testing.T) {
			_, err := collect(t, p, chatReq(`[1]`))
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadRequest, pe.Status)
		})
	})
}

// ---- streaming ----

func TestStreamChatSendsEachChunkAsItArrives(t *testing.T) {
	var release chan struct{} // each mode's, made before its call
	var upstreamFinished atomic.Bool
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, "data: {\"id\":\"1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(3 * time.Second): // a buffering implementation ends up here
		}
		upstreamFinished.Store(true)
		writeSSE(w, "data: {\"id\":\"1\",\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n", "data: [DONE]\n\n")
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		release = make(chan struct{})
		upstreamFinished.Store(false)
		var chunks []string
		var firstBeforeEnd bool
		err := p.StreamChat(context.Background(), chatReq(simpleBody), func(c pluginapi.ChatChunk) error {
			chunks = append(chunks, string(c.Data))
			if len(chunks) == 1 {
				firstBeforeEnd = !upstreamFinished.Load()
				close(release)
			}
			return nil
		})
		require.NoError(t, err)
		assert.True(t, firstBeforeEnd, "send must be called before the upstream finishes the stream")
		assert.Equal(t, []string{
			`{"id":"1","choices":[{"delta":{"content":"Hel"}}]}`,
			`{"id":"1","choices":[{"delta":{"content":"lo"}}]}`,
		}, chunks)
	})
}

func TestStreamUsage(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"usage\"}}],\"usage\":null}\n\n",
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3,\"total_tokens\":5}}\n\n",
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":10,\"total_tokens\":19}}\n\n",
			"data: [DONE]\n\n")
	})
	req := chatReq(simpleBody)
	req.IncludeUsage = true
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, req)
		require.NoError(t, err)
		require.Len(t, chunks, 3)

		assert.Nil(t, chunks[0].Usage)
		assert.False(t, chunks[0].UsageOnly)

		require.NotNil(t, chunks[1].Usage, "usage on a chunk with choices")
		assert.Equal(t, pluginapi.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}, *chunks[1].Usage)
		assert.False(t, chunks[1].UsageOnly)

		require.NotNil(t, chunks[2].Usage)
		assert.Equal(t, pluginapi.Usage{PromptTokens: 9, CompletionTokens: 10, TotalTokens: 19}, *chunks[2].Usage)
		assert.True(t, chunks[2].UsageOnly, "empty choices + usage is a usage-only chunk")
	})
}

func TestStreamInStreamErrors(t *testing.T) {
	first := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
	cases := []struct {
		name       string
		events     []string
		wantChunks int
		want       pluginapi.ProviderError
	}{
		{"error object after a chunk", []string{first, "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"}, 1,
			pluginapi.ProviderError{Status: 502, Type: "server_error", Message: "The server had an error"}},
		{"error object first", []string{"data: {\"error\":{\"message\":\"overloaded\",\"code\":503}}\n\n"}, 0,
			pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: "503", Message: "overloaded"}},
		{"event: error", []string{first, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"}, 1,
			pluginapi.ProviderError{Status: 502, Type: "overloaded_error", Message: "Overloaded"}},
		{"error echoing the key", []string{"data: {\"error\":{\"message\":\"key " + testKey + " bad\"}}\n\n"}, 0,
			pluginapi.ProviderError{Status: 502, Type: "upstream_error", Message: "key [REDACTED] bad"}},
		{"json instead of a stream", []string{}, 0,
			pluginapi.ProviderError{Status: 502, Type: "invalid_request_error", Message: "stream not supported"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if len(tc.events) == 0 {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"error":{"message":"stream not supported","type":"invalid_request_error"}}`)
					return
				}
				writeSSE(w, append(tc.events, "data: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n", "data: [DONE]\n\n")...)
			})
			modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
				chunks, err := collect(t, p, chatReq(simpleBody))
				pe := requireProviderError(t, err)
				assert.Len(t, chunks, tc.wantChunks)
				assert.Equal(t, tc.want.Status, pe.Status)
				assert.Equal(t, tc.want.Type, pe.Type)
				assert.Equal(t, tc.want.Code, pe.Code)
				assert.Contains(t, pe.Message, tc.want.Message)
				assert.NotContains(t, pe.Error(), testKey)
			})
		})
	}
}

func TestStreamBadSuccessBodies(t *testing.T) {
	t.Run("a page, not a stream", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body>Bad gateway, try later</body></html>\n")
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			chunks, err := collect(t, p, chatReq(simpleBody))
			pe := requireProviderError(t, err)
			assert.Empty(t, chunks)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Contains(t, pe.Message, "without an event stream")
		})
	})
	t.Run("a completion, not a stream", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"private answer"}}]}`)
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := collect(t, p, chatReq(simpleBody))
			pe := requireProviderError(t, err)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Contains(t, pe.Message, "answered without streaming")
			assert.NotContains(t, pe.Message, "private answer", "the answer is not an error message")
		})
	})
}

// A stream that stops before its answer ended (no finish_reason, no
// [DONE]: a body delimited by its close, a proxy that ended it) fails
// after relaying what came, as a cut connection does; one that leaves out
// only [DONE] ends well after its finish_reason.
func TestStreamCutShortFails(t *testing.T) {
	const (
		first = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`
		last  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	)
	for _, tc := range []struct {
		name   string
		events []string
		want   []string
		ok     bool
	}{
		{"cut mid-answer", []string{"data: " + first + "\n\n"}, []string{first}, false},
		{"an empty event stream", nil, nil, false},
		{"only keep-alives", []string{": ping\n\n"}, nil, false},
		{"no [DONE] after the finish", []string{"data: " + first + "\n\n", "data: " + last + "\n\n"}, []string{first, last}, true},
		{"whole", []string{"data: " + first + "\n\n", "data: " + last + "\n\n", "data: [DONE]\n\n"}, []string{first, last}, true},
		{"[DONE] without its blank line, then more", []string{"data: " + first + "\n\n", "data: [DONE]\ndata: [DONE]\n\n"}, []string{first}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeSSE(w, tc.events...) })
			modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
				chunks, err := collect(t, p, chatReq(simpleBody))
				assert.Equal(t, tc.want, nilIfEmpty(chunkData(chunks)))
				if tc.ok {
					require.NoError(t, err)
					return
				}
				pe := requireProviderError(t, err)
				assert.Equal(t, http.StatusBadGateway, pe.Status)
				assert.Contains(t, pe.Message, "stream ended before its answer did")
			})
		})
	}
}

// An upstream that keeps the body open after [DONE] does not hold the
// stream's end, which svc waits for to finish the client's answer.
func TestStreamEndsAtDoneWhenTheBodyStaysOpen(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: [DONE]\n\n")
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				writeSSE(w, ": ping\n\n")
			}
		}
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		done := make(chan error, 1)
		go func() {
			_, err := collect(t, p, chatReq(simpleBody))
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("the stream did not end at [DONE]")
		}
	})
}

func TestStreamInterrupted(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: {\"choi")
		// Cut the connection mid-event, without the chunked terminator.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, chatReq(simpleBody))
		pe := requireProviderError(t, err)
		assert.Len(t, chunks, 1)
		assert.Equal(t, http.StatusBadGateway, pe.Status)
		assert.Contains(t, pe.Message, "interrupted")
	})
}

func TestStreamOverCRLF(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, ": connected\r\n\r\n", "data: {\"a\":1}\r\n\r\n", "event: message\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n", "data: [DONE]\r\n\r\n")
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, chatReq(simpleBody))
		require.NoError(t, err)
		assert.Equal(t, []string{`{"a":1}`, `{"b":2}`}, chunkData(chunks), "an event of two data lines goes on as one")
	})
}

// ---- benchmarks ----

func BenchmarkChat(b *testing.B) {
	resp := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`)
	srv := newFake(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	})
	u := newUpstream(srv.URL, testKey)
	req := chatReq(simpleBody)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := u.Chat(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkStreamRequestBody(b *testing.B) {
	body := []byte(`{"model":"gpt-test","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":100,"stream":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := streamRequestBody(body, true); err != nil {
			b.Fatal(err)
		}
	}
}

// An answer whose headers pass the transport's bound is the upstream's
// fault, named as such.
func TestHeadersTooLargeAreTheUpstreamsFault(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 80 {
			w.Header().Set(fmt.Sprintf("X-Big-%d", i), strings.Repeat("h", 16<<10))
		}
		io.WriteString(w, `{"choices":[]}`)
	})
	u := newUpstream(srv.URL, testKey)
	_, err := u.Chat(context.Background(), chatReq(simpleBody))
	pe := requireProviderError(t, err)
	assert.Equal(t, 502, pe.Status)
	assert.Equal(t, codeTooLarge, pe.Code)
}

// A model list longer than any real one stops at pluginapi.MaxModels, and
// a time beyond any is none.
func TestModelsStopAtTheMost(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`{"object":"list","data":[{"id":"far","created":1e300}`)
		for i := range pluginapi.MaxModels + 100 {
			fmt.Fprintf(&b, `,{"id":"m-%d"}`, i)
		}
		b.WriteString(`]}`)
		io.WriteString(w, b.String())
	})
	models, err := newUpstream(srv.URL+"/v1", testKey).Models(context.Background())
	require.NoError(t, err)
	require.Len(t, models, pluginapi.MaxModels)
	assert.Equal(t, pluginapi.Model{ID: "far", Kind: pluginapi.KindChat}, models[0])
}
