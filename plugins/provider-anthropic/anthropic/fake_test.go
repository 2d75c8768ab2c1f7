package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const testKey = "sk-ant-test-SECRET-0123456789"

// ---- a fake Messages API, after Anthropic's published documentation ----

// wireRequest is POST /v1/messages's body as the API reference documents
// it; the fake refuses members it does not list, as the API does.
type wireRequest struct {
	Model     string        `json:"model"`
	MaxTokens int64         `json:"max_tokens"`
	System    string        `json:"system,omitempty"`
	Messages  []wireMessage `json:"messages"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools,omitempty"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name,omitempty"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
	} `json:"tool_choice,omitempty"`
	StopSequences []string `json:"stop_sequences,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"top_p,omitempty"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata,omitempty"`
	Stream bool `json:"stream,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text,omitempty"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	} `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []wireBlock     `json:"content,omitempty"`
}

// validate checks what the documentation says a request must be; the
// message is what the fake answers a 400 with.
// toolUseIDPattern is what the Messages API takes as a tool_use id.
var toolUseIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func (r *wireRequest) validate() string {
	switch {
	case r.Model == "":
		return "model: Field required"
	case r.MaxTokens < 1:
		return "max_tokens: must be at least 1"
	case len(r.Messages) == 0:
		return "messages: at least one message is required"
	case r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1):
		return "temperature: must be between 0 and 1"
	}
	toolUses := map[string]bool{}
	sawResult := false
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: must be user or assistant", i)
		}
		if i > 0 && r.Messages[i-1].Role == m.Role {
			return fmt.Sprintf("messages.%d: roles must alternate between user and assistant", i)
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("messages.%d: content must not be empty", i)
		}
		for j, b := range m.Content {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					return where + ": text content blocks must contain non-whitespace text"
				}
				if i == len(r.Messages)-1 && j == len(m.Content)-1 && m.Role == "assistant" && strings.TrimRightFunc(b.Text, unicode.IsSpace) != b.Text {
					return "final assistant content cannot end with trailing whitespace"
				}
			case "image":
				s := b.Source
				switch {
				case s == nil:
					return where + ".source: Field required"
				case s.Type == "base64" && (s.Data == "" || s.MediaType == ""):
					return where + ".source: base64 needs media_type and data"
				case s.Type == "url" && s.URL == "":
					return where + ".source.url: Field required"
				case s.Type != "base64" && s.Type != "url":
					return where + ".source.type: must be base64 or url"
				}
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" || b.Name == "" || !isObject(b.Input) {
					return where + ": tool_use needs an id, a name and an object input, in an assistant turn"
				}
				if !toolUseIDPattern.MatchString(b.ID) {
					return where + ".id: String should match pattern '^[a-zA-Z0-9_-]+$'"
				}
				toolUses[b.ID] = true
			case "tool_result":
				if m.Role != "user" || !toolUses[b.ToolUseID] {
					return where + ": tool_result must answer an earlier tool_use"
				}
				if j > 0 && m.Content[j-1].Type != "tool_result" {
					return where + ": tool_result blocks must come first in the content array, any text after them"
				}
				sawResult = true
			default:
				return where + ".type: unknown content block type " + strconv.Quote(b.Type)
			}
		}
	}
	if (len(toolUses) > 0 || sawResult) && len(r.Tools) == 0 {
		return "Requests which include `tool_use` or `tool_result` blocks must define tools."
	}
	for i, tl := range r.Tools {
		if tl.Name == "" || !isObject(tl.InputSchema) {
			return fmt.Sprintf("tools.%d: name and an input_schema object are required", i)
		}
	}
	if c := r.ToolChoice; c != nil {
		switch {
		case c.Type != "auto" && c.Type != "any" && c.Type != "tool" && c.Type != "none":
			return "tool_choice.type: must be auto, any, tool or none"
		case c.Type == "tool" && c.Name == "":
			return "tool_choice.name: Field required"
		case len(r.Tools) == 0:
			return "tool_choice: may only be specified while providing tools"
		}
	}
	return ""
}

type seen struct {
	header http.Header
	body   []byte
	req    wireRequest
}

// fake is an httptest server implementing POST /v1/messages and GET
// /v1/models. answer writes a valid request's answer.
type fake struct {
	*httptest.Server
	key    string // the x-api-key it requires; "" requires none
	answer func(w http.ResponseWriter, r *http.Request, req wireRequest)
	models []string

	mu   sync.Mutex
	seen []seen
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, req wireRequest)) *fake {
	t.Helper()
	f := &fake{key: testKey, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) provider(t *testing.T, mutate ...func(*pluginapi.ProviderConfig)) *Provider {
	t.Helper()
	cfg := pluginapi.ProviderConfig{BaseURL: f.URL, APIKey: f.key}
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := newProvider(cfg, nil)
	require.NoError(t, err)
	return p
}

func (f *fake) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.seen, "the upstream saw no request")
	return f.seen[len(f.seen)-1]
}

func apiErrorBody(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(apiErrorBody(typ, msg)))
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if f.key != "" && r.Header.Get("X-Api-Key") != f.key {
		writeError(w, 401, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		writeError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		f.serveModels(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(r.Body)
		var req wireRequest
		dec := json.NewDecoder(bytes.NewReader(body.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, 400, "invalid_request_error", "invalid request: "+err.Error())
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, seen{header: r.Header.Clone(), body: body.Bytes(), req: req})
		f.mu.Unlock()
		if msg := req.validate(); msg != "" {
			writeError(w, 400, "invalid_request_error", msg)
			return
		}
		f.answer(w, r, req)
	default:
		writeError(w, 404, "not_found_error", "Not found")
	}
}

// serveModels pages f.models by limit and after_id, as List Models does.
func (f *fake) serveModels(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 20
	}
	start := 0
	if after := r.URL.Query().Get("after_id"); after != "" {
		for i, id := range f.models {
			if id == after {
				start = i + 1
			}
		}
	}
	end := min(start+limit, len(f.models))
	type model struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	page := struct {
		Data    []model `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID string  `json:"first_id,omitempty"`
		LastID  string  `json:"last_id,omitempty"`
	}{Data: []model{}, HasMore: end < len(f.models)}
	for _, id := range f.models[start:end] {
		page.Data = append(page.Data, model{ID: id, Type: "model", DisplayName: id, CreatedAt: "2025-02-19T00:00:00Z"})
	}
	if end > start {
		page.FirstID, page.LastID = f.models[start], f.models[end-1]
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(page)
}

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// serveJSON answers with a testdata file.
func serveJSON(name string) func(http.ResponseWriter, *http.Request, wireRequest) {
	return func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			writeError(w, 500, "api_error", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

// serveSSE answers with an event stream: a testdata file, or the text.
func serveSSE(name string) func(http.ResponseWriter, *http.Request, wireRequest) {
	return func(w http.ResponseWriter, r *http.Request, req wireRequest) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			writeError(w, 500, "api_error", err.Error())
			return
		}
		writeStream(w, string(b))
	}
}

func writeStream(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(text))
}
