package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modelsUpstream is an OpenAI-compatible upstream that knows some models
// and answers 404 model_not_found for the others, as OpenAI does.
func modelsUpstream(t *testing.T) *httptest.Server {
	known := map[string]bool{"gpt-4o-mini": true, "text-embedding-3-small": true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"up"},`+
				`{"id":"text-embedding-3-small","object":"model","created":1,"owned_by":"up"},{"id":"dall-e-3","object":"model","created":1,"owned_by":"up"}]}`)
		case !known[body.Model]:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"The model `+"`%s`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, body.Model)
		case r.URL.Path == "/v1/embeddings":
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
		default:
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (p *proc) post(t *testing.T, path, body string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return res.StatusCode, res.Header.Get("x-svc-run-id"), out
}

// Through provider-openai, an unknown model is the upstream's 404
// model_not_found in the provider's shape, recorded as a failed run; an
// embeddings call is passed through, priced and recorded.
func TestEmbeddingsAndUnknownModelsThroughProviderOpenAI(t *testing.T) {
	up := modelsUpstream(t)
	p := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1")

	for path, body := range map[string]string{
		"/v1/chat/completions": `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`,
		"/v1/embeddings":       `{"model":"text-embedding-9","input":"hi"}`,
	} {
		status, runID, out := p.post(t, path, body)
		require.Equal(t, http.StatusNotFound, status, "%s: %v", path, out)
		e := out["error"].(map[string]any)
		assert.Equal(t, "model_not_found", e["code"], path)
		assert.Equal(t, "invalid_request_error", e["type"], path)
		assert.Contains(t, e["message"], "does not exist", path)
		require.NotEmpty(t, runID, path)
		_, run := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
		r := run["run"].(map[string]any)
		assert.Equal(t, "error", r["status"], path)
		assert.InDelta(t, 404, r["httpStatus"], 0, path)
	}

	status, runID, out := p.post(t, "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hi"}`)
	require.Equal(t, http.StatusOK, status, out)
	assert.Equal(t, []any{0.6, 0.8}, out["data"].([]any)[0].(map[string]any)["embedding"])
	_, run := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
	r := run["run"].(map[string]any)
	assert.Equal(t, "openai", r["provider"])
	assert.InDelta(t, 8*0.02/1e6, r["costUsd"], 1e-15)

	status, models := p.call(t, "GET", "/v1/models", "", "")
	require.Equal(t, http.StatusOK, status)
	kinds := map[string]any{}
	for _, m := range models["data"].([]any) {
		kinds[m.(map[string]any)["id"].(string)] = m.(map[string]any)["svc_kind"]
	}
	assert.Equal(t, map[string]any{"gpt-4o-mini": "chat", "text-embedding-3-small": "embedding"}, kinds,
		"what the upstream serves that svc can answer, marked")
}
