package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

const hello = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello, Claude"}]}`

func chatReq(body string) pluginapi.ChatRequest {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return pluginapi.ChatRequest{Body: []byte(body), Model: m.Model, RequestID: "run-1"}
}

func requireProviderError(t *testing.T, err error) *pluginapi.ProviderError {
	t.Helper()
	var pe *pluginapi.ProviderError
	require.True(t, errors.As(err, &pe), "want a *ProviderError, got %T %v", err, err)
	return pe
}

// completionJSON is the part of a chat.completion the tests read.
type completionJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]any `json:"usage"`
}

func decodeCompletion(t *testing.T, b []byte) completionJSON {
	t.Helper()
	var c completionJSON
	require.NoError(t, json.Unmarshal(b, &c), string(b))
	return c
}

func TestChat(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		res, err := p.Chat(context.Background(), chatReq(hello))
		require.NoError(t, err)
		c := decodeCompletion(t, res.Body)
		assert.Equal(t, "msg_013Zva2CMHLNnXjNJJKqJ2EF", c.ID)
		assert.Equal(t, "chat.completion", c.Object)
		assert.Positive(t, c.Created)
		assert.Equal(t, "claude-sonnet-4-5-20250929", c.Model)
		require.Len(t, c.Choices, 1)
		assert.Equal(t, "assistant", c.Choices[0].Message.Role)
		require.NotNil(t, c.Choices[0].Message.Content)
		assert.Equal(t, "Hi! My name is Claude.", *c.Choices[0].Message.Content)
		assert.Empty(t, c.Choices[0].Message.ToolCalls)
		assert.Equal(t, "stop", c.Choices[0].FinishReason)
		assert.Equal(t, pluginapi.Usage{PromptTokens: 2095, CompletionTokens: 503, TotalTokens: 2598}, res.Usage)
		assert.EqualValues(t, 2095, c.Usage["prompt_tokens"])
		assert.EqualValues(t, 503, c.Usage["completion_tokens"])
		assert.EqualValues(t, 2598, c.Usage["total_tokens"])

		got := f.last(t)
		assert.Equal(t, "claude-sonnet-4-5", got.req.Model)
		assert.EqualValues(t, 4096, got.req.MaxTokens)
		assert.False(t, got.req.Stream)
	})
}

func TestChatHeaders(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	p := f.provider(t, func(c *pluginapi.ProviderConfig) {
		c.Headers = map[string]string{"anthropic-beta": "prompt-caching-2024-07-31", "X-Team": "search", "x-api-key": "not-this-one",
			"authorization": "Bearer not-this-either", "Host": "elsewhere.example", "User-Agent": "acme-gateway/2"}
	})
	providertest.Modes(t, p, func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), chatReq(hello))
		require.NoError(t, err)
		h := f.last(t).header
		assert.Equal(t, []string{testKey}, h.Values("X-Api-Key"), "the configured key, once; a header cannot replace it")
		assert.Equal(t, "2023-06-01", h.Get("Anthropic-Version"))
		assert.Equal(t, "application/json", h.Get("Content-Type"))
		assert.Equal(t, "prompt-caching-2024-07-31", h.Get("Anthropic-Beta"))
		assert.Equal(t, "search", h.Get("X-Team"))
		assert.Equal(t, "run-1", h.Get("X-Request-Id"))
		assert.Empty(t, h.Get("Authorization"))
		assert.Equal(t, "acme-gateway/2", h.Get("User-Agent"), "the operator's User-Agent wins")
	})
}

func TestTraceContextReachesTheUpstream(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	f := newFake(t, serveJSON("message.json"))
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		req := chatReq(hello)
		req.TraceParent, req.TraceState = tp, "vendor=abc"
		_, err := p.Chat(context.Background(), req)
		require.NoError(t, err)
		h := f.last(t).header
		assert.Equal(t, tp, h.Get("Traceparent"))
		assert.Equal(t, "vendor=abc", h.Get("Tracestate"))

		_, err = p.Chat(context.Background(), chatReq(hello))
		require.NoError(t, err)
		_, present := f.last(t).header["Traceparent"]
		assert.False(t, present, "no trace context, no header")
	})
}

func TestNewRefusesABadHeader(t *testing.T) {
	for _, h := range []map[string]string{{"X-Team": "a\r\nX-Evil: b"}, {"X Team": "a"}, {"X-Team": "a\x00"}} {
		_, err := New(pluginapi.ProviderConfig{Headers: h}, nil)
		assert.ErrorContains(t, err, "not a valid HTTP header", "%q", h)
	}
}

func TestNoKeyNoHeader(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	f.key = ""
	p := f.provider(t)
	_, err := p.Chat(context.Background(), chatReq(hello))
	require.NoError(t, err)
	_, has := f.last(t).header["X-Api-Key"]
	assert.False(t, has, "no key configured: no x-api-key header at all")
}

func TestChatToolUse(t *testing.T) {
	f := newFake(t, serveJSON("message_tool_use.json"))
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"What's the weather like in San Francisco?"}],
	  "tools":[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a given location",
	  "parameters":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}}}]}`
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		res, err := p.Chat(context.Background(), chatReq(body))
		require.NoError(t, err)
		c := decodeCompletion(t, res.Body)
		ch := c.Choices[0]
		assert.Equal(t, "tool_calls", ch.FinishReason)
		require.NotNil(t, ch.Message.Content)
		assert.Equal(t, "I'll check the current weather in San Francisco for you.", *ch.Message.Content)
		require.Len(t, ch.Message.ToolCalls, 1)
		tc := ch.Message.ToolCalls[0]
		assert.Equal(t, "toolu_01A09q90qw90lq917835lq9", tc.ID)
		assert.Equal(t, "function", tc.Type)
		assert.Equal(t, "get_weather", tc.Function.Name)
		assert.JSONEq(t, `{"location": "San Francisco, CA", "unit": "celsius"}`, tc.Function.Arguments)
		assert.Equal(t, `{"location":"San Francisco, CA","unit":"celsius"}`, tc.Function.Arguments, "compact JSON")

		got := f.last(t).req
		require.Len(t, got.Tools, 1)
		assert.Equal(t, "get_weather", got.Tools[0].Name)
	})
}

func TestChatOnlyToolUseHasNullContent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",
		  "content":[{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"usage":{"input_tokens":1,"output_tokens":1}}`))
	})
	res, err := f.provider(t).Chat(context.Background(), chatReq(hello))
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), `"content":null`)
	assert.Contains(t, string(res.Body), `"arguments":"{}"`)
}

func TestFinishReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"tool_use": "tool_calls", "refusal": "content_filter", "model_context_window_exceeded": "length",
	} {
		t.Run(stop, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"` + stop +
					`","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":1}}`))
			})
			res, err := f.provider(t).Chat(context.Background(), chatReq(hello))
			require.NoError(t, err)
			assert.Equal(t, want, decodeCompletion(t, res.Body).Choices[0].FinishReason)
		})
	}
}

func TestChatCacheUsage(t *testing.T) {
	f := newFake(t, serveJSON("message_cached.json"))
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		res, err := p.Chat(context.Background(), chatReq(hello))
		require.NoError(t, err)
		// input_tokens 21 + cache_creation 188086 + cache_read 0
		assert.Equal(t, pluginapi.Usage{PromptTokens: 188107, CompletionTokens: 393, TotalTokens: 188500, CacheWriteTokens: 188086}, res.Usage,
			"the cache writes are told apart, for their price, through the plugin protocol too")
		c := decodeCompletion(t, res.Body)
		assert.EqualValues(t, 188107, c.Usage["prompt_tokens"])
		assert.EqualValues(t, 188086, c.Usage["cache_creation_input_tokens"])
		assert.Equal(t, map[string]any{"cached_tokens": 0.0}, c.Usage["prompt_tokens_details"])
	})

	read := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_2","type":"message","role":"assistant","model":"m","stop_reason":"end_turn",
		  "content":[{"type":"text","text":"x"}],"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":188086,"output_tokens":393}}`))
	})
	res, err := read.provider(t).Chat(context.Background(), chatReq(hello))
	require.NoError(t, err)
	assert.Equal(t, pluginapi.Usage{PromptTokens: 188107, CompletionTokens: 393, TotalTokens: 188500, CachedPromptTokens: 188086}, res.Usage)
	c := decodeCompletion(t, res.Body)
	assert.Equal(t, map[string]any{"cached_tokens": 188086.0}, c.Usage["prompt_tokens_details"])
	assert.EqualValues(t, 0, c.Usage["cache_creation_input_tokens"])
}

// The translation's refusals never reach the upstream.
func TestChatRefusesBeforeCallingUpstream(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), chatReq(`{"model":"m","n":3,"messages":[{"role":"user","content":"Hi"}]}`))
		pe := requireProviderError(t, err)
		assert.Equal(t, 400, pe.Status)
		assert.Equal(t, "n", pe.Param)
		err = p.StreamChat(context.Background(), chatReq(`{"model":"m","n":3,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`),
			func(pluginapi.ChatChunk) error { return nil })
		assert.Equal(t, "n", requireProviderError(t, err).Param)
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.seen)
}

func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		status      int
		typ         string
		wantStatus  int
		wantType    string
		wantCode    string
		wantParam   string
		wantMessage string // a part of it
	}{
		{400, "invalid_request_error", 400, "invalid_request_error", "invalid_request_error", "", "the upstream said so"},
		{401, "authentication_error", 502, "upstream_error", "upstream_auth_failed", "", "rejected svc's credentials"},
		{402, "billing_error", 502, "upstream_error", "upstream_billing", "", "operator's account (HTTP 402): the upstream said so"},
		{403, "permission_error", 502, "upstream_error", "upstream_auth_failed", "", "rejected svc's credentials"},
		{404, "not_found_error", 404, "invalid_request_error", "model_not_found", "model", "the upstream said so"},
		{413, "request_too_large", 413, "invalid_request_error", "request_too_large", "", "the upstream said so"},
		{429, "rate_limit_error", 429, "rate_limit_error", "rate_limit_error", "", "the upstream said so"},
		{500, "api_error", 500, "upstream_error", "api_error", "", "HTTP 500 api_error"},
		{504, "timeout_error", 504, "upstream_error", "timeout_error", "", "HTTP 504 timeout_error"},
		{529, "overloaded_error", 529, "upstream_error", "overloaded_error", "", "HTTP 529 overloaded_error"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				writeError(w, tc.status, tc.typ, "the upstream said so, key "+testKey)
			})
			providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
				_, err := p.Chat(context.Background(), chatReq(hello))
				pe := requireProviderError(t, err)
				assert.Equal(t, tc.wantStatus, pe.Status)
				assert.Equal(t, tc.wantType, pe.Type)
				assert.Equal(t, tc.wantCode, pe.Code)
				assert.Equal(t, tc.wantParam, pe.Param)
				assert.Contains(t, pe.Message, tc.wantMessage)
				assert.NotContains(t, pe.Message, testKey)
				assert.NotContains(t, err.Error(), testKey)

				// A stream refused before its first event maps the same.
				err = p.StreamChat(context.Background(), chatReq(hello), func(pluginapi.ChatChunk) error { return nil })
				pe = requireProviderError(t, err)
				assert.Equal(t, tc.wantStatus, pe.Status)
				assert.Equal(t, tc.wantCode, pe.Code)
			})
		})
	}
}

// The documentation's overloaded error, as is: a 5xx svc retries.
func TestOverloadedIsRetryable(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(529)
		_, _ = w.Write(testdata(t, "error_overloaded.json"))
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), chatReq(hello))
		pe := requireProviderError(t, err)
		assert.Equal(t, 529, pe.Status, "kept: svc retries and falls back on a 5xx")
		assert.Equal(t, "overloaded_error", pe.Code)
		assert.Contains(t, pe.Message, "Overloaded")
		assert.Equal(t, 3*time.Second, pe.RetryAfter)
	})
}

func TestRateLimitRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"7", 7 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"", 0},
		{"soon", 0},
		{"-3", 0},
		{"99999999", pluginapi.MaxRetryAfter},
	} {
		t.Run(tc.header, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				writeError(w, 429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
			})
			providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
				_, err := p.Chat(context.Background(), chatReq(hello))
				pe := requireProviderError(t, err)
				assert.Equal(t, 429, pe.Status)
				assert.Equal(t, tc.want, pe.RetryAfter)
			})
		})
	}
}

func TestBadSuccessBodies(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":      `<html>oops</html>`,
		"an array":      `[1]`,
		"not a message": `{"type":"completion","completion":"x"}`,
		"empty":         `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			})
			_, err := f.provider(t).Chat(context.Background(), chatReq(hello))
			pe := requireProviderError(t, err)
			assert.Equal(t, 502, pe.Status)
			assert.Equal(t, "upstream_bad_response", pe.Code)
		})
	}
}

func TestErrorBodyWithA200(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(testdata(t, "error_overloaded.json"))
	})
	_, err := f.provider(t).Chat(context.Background(), chatReq(hello))
	pe := requireProviderError(t, err)
	assert.Equal(t, 529, pe.Status)
	assert.Equal(t, "overloaded_error", pe.Code)
}

// An upstream's error is bounded, and no cut leaves a part of the key in
// it: a plain-text body cut inside the key, and an error type of megabytes
// in a 2xx body (which crossing to svc would otherwise break the plugin's
// connection).
func TestUpstreamErrorsAreBoundedAndKeepNoPartOfTheKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(500)
		_, _ = io.WriteString(w, strings.Repeat("y", 497)+testKey)
	})
	_, err := f.provider(t).Chat(context.Background(), chatReq(hello))
	pe := requireProviderError(t, err)
	assert.Contains(t, pe.Message, "yyy[REDACTED]…")
	assert.NotContains(t, pe.Message, "sk-")

	f = newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(apiErrorBody(strings.Repeat("T", 5<<20), strings.Repeat("m", 5<<20))))
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		_, err := p.Chat(context.Background(), chatReq(hello))
		pe := requireProviderError(t, err)
		assert.Equal(t, 502, pe.Status)
		assert.LessOrEqual(t, len(pe.Code), maxTypeBytes+len("…"))
		assert.LessOrEqual(t, len(pe.Message), 2*maxMessageBytes)
		_, err = p.Models(context.Background())
		require.NoError(t, err, "the plugin's connection is still up")
	})
}

func TestResponseSizeBound(t *testing.T) {
	big := `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"end_turn","content":[{"type":"text","text":"` +
		strings.Repeat("a", 4096) + `"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(big))
	})
	p := f.provider(t)
	p.maxResponse = 1024
	_, err := p.Chat(context.Background(), chatReq(hello))
	assert.Equal(t, "upstream_response_too_large", requireProviderError(t, err).Code)

	p.maxResponse = int64(len(big))
	_, err = p.Chat(context.Background(), chatReq(hello))
	assert.NoError(t, err, "exactly the limit is fine")
}

func TestChatCancellationReachesUpstream(t *testing.T) {
	gone := make(chan struct{})
	started := make(chan struct{})
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request, _ wireRequest) {
		close(started)
		<-r.Context().Done()
		close(gone)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := f.provider(t).Chat(ctx, chatReq(hello))
	require.ErrorIs(t, err, context.Canceled)
	<-gone // the upstream request was cancelled too
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request, _ wireRequest) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	p := f.provider(t, func(c *pluginapi.ProviderConfig) { c.Timeout = 50 * time.Millisecond })
	_, err := p.Chat(context.Background(), chatReq(hello))
	pe := requireProviderError(t, err)
	assert.Equal(t, 502, pe.Status)
	assert.Equal(t, "upstream_timeout", pe.Code)

	err = p.StreamChat(context.Background(), chatReq(hello), func(pluginapi.ChatChunk) error { return nil })
	assert.Equal(t, "upstream_timeout", requireProviderError(t, err).Code)
}

func TestConnectionRefused(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	p := f.provider(t)
	f.Close()
	_, err := p.Chat(context.Background(), chatReq(hello))
	pe := requireProviderError(t, err)
	assert.Equal(t, 502, pe.Status)
	assert.Equal(t, "upstream_unreachable", pe.Code)
	assert.NotContains(t, pe.Message, f.URL, "the message names the failure, not the operator's URL")
}

func TestNew(t *testing.T) {
	for _, bad := range []string{"ftp://x", "not a url", "https://user:pw@api.anthropic.com", "/relative"} {
		_, err := New(pluginapi.ProviderConfig{BaseURL: bad}, nil)
		assert.Error(t, err, bad)
	}
	p, err := New(pluginapi.ProviderConfig{}, nil)
	require.NoError(t, err)
	assert.Equal(t, "https://api.anthropic.com/v1/messages", p.(*Provider).messagesURL)
	assert.Equal(t, "https://api.anthropic.com/v1/models", p.(*Provider).modelsURL)
	p, err = New(pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:9/proxy/"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9/proxy/v1/messages", p.(*Provider).messagesURL)

	_, isEmbedder := p.(pluginapi.Embedder)
	assert.False(t, isEmbedder, "Anthropic has no embeddings: svc answers them 404 model_not_found")
}

func TestModels(t *testing.T) {
	f := newFake(t, nil)
	for i := 0; i < 2500; i++ { // three pages of 1000
		f.models = append(f.models, "claude-"+strings.Repeat("x", i%3)+"-"+time.Unix(int64(i), 0).UTC().Format("150405"))
	}
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		models, err := p.Models(context.Background())
		require.NoError(t, err)
		require.Len(t, models, 2500)
		assert.Equal(t, f.models[0], models[0].ID)
		assert.Equal(t, f.models[2499], models[2499].ID)
		for _, m := range models {
			assert.Equal(t, pluginapi.KindChat, m.Kind)
			assert.Equal(t, "anthropic", m.OwnedBy)
			assert.Equal(t, time.Date(2025, 2, 19, 0, 0, 0, 0, time.UTC).Unix(), m.Created)
		}
	})
}

func TestModelsDocumentationExample(t *testing.T) {
	f := newFake(t, nil)
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(testdata(t, "models.json"))
	})
	models, err := f.provider(t).Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []pluginapi.Model{{ID: "claude-sonnet-4-20250514", OwnedBy: "anthropic", Created: 1739923200, Kind: pluginapi.KindChat}}, models)
}

func TestModelsErrors(t *testing.T) {
	f := newFake(t, nil)
	f.key = "another key"
	_, err := f.provider(t, func(c *pluginapi.ProviderConfig) { c.APIKey = testKey }).Models(context.Background())
	assert.Equal(t, "upstream_auth_failed", requireProviderError(t, err).Code)

	g := newFake(t, nil)
	g.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("nope")) })
	_, err = g.provider(t).Models(context.Background())
	assert.Equal(t, "upstream_bad_response", requireProviderError(t, err).Code)
}

func TestHeadersCannotCarryAKey(t *testing.T) {
	f := newFake(t, serveJSON("message.json"))
	f.key = ""
	p := f.provider(t, func(c *pluginapi.ProviderConfig) { c.Headers = map[string]string{"X-Api-Key": "smuggled"} })
	_, err := p.Chat(context.Background(), chatReq(hello))
	require.NoError(t, err)
	assert.Empty(t, f.last(t).header.Values("X-Api-Key"), "only the configured key is ever sent as x-api-key")
}

// The timeout's timer ends with the call on every path, not when the
// timeout passes.
func TestTimeoutTimerStopsWithTheCall(t *testing.T) {
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:1", Timeout: time.Hour}, nil)
	require.NoError(t, err)
	_, cancel, d := p.withTimeout(context.Background())
	cancel()
	assert.False(t, d.timer.Stop(), "cancel stopped the timer")
	assert.False(t, d.fired.Load())
}

// The configured timeout bounds the whole model list, every page of it.
func TestModelsHonoursTheTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("after_id") == "" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"claude-a","type":"model"}],"has_more":true,"last_id":"claude-a"}`))
			return
		}
		select { // the second page never comes
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: srv.URL, Timeout: 50 * time.Millisecond}, nil)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { _, err := p.Models(context.Background()); done <- err }()
	select {
	case err := <-done:
		assert.Equal(t, "upstream_timeout", requireProviderError(t, err).Code)
	case <-time.After(30 * time.Second):
		t.Fatal("Models ignored the configured timeout")
	}
}

// A count that Anthropic could not have meant makes the call's usage
// unknown to svc, even where a sum of counts would hide it: a negative
// input offset by cache counts, or one beyond any model.
func TestUnbelievableCountsAreNoUsage(t *testing.T) {
	for name, usage := range map[string]string{
		"negative input hidden in a sum": `{"input_tokens":-100,"output_tokens":5,"cache_read_input_tokens":60,"cache_creation_input_tokens":50}`,
		"beyond any model":               `{"input_tokens":1099511627776,"output_tokens":5}`,
		"a sum that wraps around":        `{"input_tokens":9223372036854775807,"output_tokens":1,"cache_read_input_tokens":9223372036854775807,"cache_creation_input_tokens":3}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"end_turn",`+
					`"content":[{"type":"text","text":"hi"}],"usage":`+usage+`}`)
			})
			res, err := f.provider(t).Chat(context.Background(), chatReq(hello))
			require.NoError(t, err)
			assert.Equal(t, pluginapi.Usage{}, res.Usage)

			f = newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
				writeStream(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":"+usage+"}}\n\n"+
					"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"+
					"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			})
			chunks, err := collect(t, f.provider(t), streamReq(helloStream, true))
			require.NoError(t, err)
			last := chunks[len(chunks)-1]
			require.True(t, last.UsageOnly)
			assert.Equal(t, pluginapi.Usage{}, *last.Usage, "streamed, the same")
		})
	}
}

// A model list longer than any real one stops at pluginapi.MaxModels.
func TestModelsStopAtTheMost(t *testing.T) {
	f := newFake(t, nil)
	for i := range pluginapi.MaxModels + 1500 {
		f.models = append(f.models, "claude-"+strconv.Itoa(i))
	}
	models, err := f.provider(t).Models(context.Background())
	require.NoError(t, err)
	require.Len(t, models, pluginapi.MaxModels)
	assert.Equal(t, "claude-0", models[0].ID)
}

// The bound on a model list's bytes is of all its pages together, not of
// each: an upstream that pages on and on cannot make svc read more.
func TestModelsBoundAllThePagesTogether(t *testing.T) {
	f := newFake(t, nil)
	for i := range 2500 { // three pages of 1000
		f.models = append(f.models, "claude-"+strconv.Itoa(i))
	}
	p := f.provider(t)
	page := len(`{"id":"claude-0000","type":"model","display_name":"claude-0000","created_at":"2025-02-19T00:00:00Z"},`) * 1000
	p.maxResponse = int64(page) * 3 / 2 // more than one page, less than two
	_, err := p.Models(context.Background())
	assert.Equal(t, "upstream_response_too_large", requireProviderError(t, err).Code)
}
