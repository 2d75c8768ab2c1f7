package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// embedCounter is the mock provider, embeddings included, counting the
// embeddings calls that reach it.
type embedCounter struct {
	pluginapi.Provider
	calls atomic.Int64
}

func (e *embedCounter) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	e.calls.Add(1)
	return e.Provider.(pluginapi.Embedder).Embed(ctx, req)
}

func embedServer(t *testing.T) (*testServer, *embedCounter) {
	t.Helper()
	p := &embedCounter{Provider: mockProvider(t)}
	return newServerWith(t, bootstrap, nil, p), p
}

// vectors decodes an embeddings answer's vectors, from either encoding.
func vectors(t *testing.T, body string) [][]float32 {
	t.Helper()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list), body)
	require.Equal(t, "list", list.Object)
	out := make([][]float32, len(list.Data))
	for i, d := range list.Data {
		require.Equal(t, i, d.Index)
		require.Equal(t, "embedding", d.Object)
		var s string
		if json.Unmarshal(d.Embedding, &s) == nil {
			raw, err := base64.StdEncoding.DecodeString(s)
			require.NoError(t, err)
			for j := 0; j+4 <= len(raw); j += 4 {
				out[i] = append(out[i], math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
			continue
		}
		require.NoError(t, json.Unmarshal(d.Embedding, &out[i]))
	}
	return out
}

const embedBody = `{"model":"text-embedding-3-small","input":["How do I get a refund?","Where is my parcel?"]}`

func TestEmbeddingsFloatAndBase64(t *testing.T) {
	ts, _ := embedServer(t)
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, embedBody)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
	floats := vectors(t, res.body)
	require.Len(t, floats, 2)
	assert.Len(t, floats[0], 1536)
	assert.Equal(t, "text-embedding-3-small", res.json["model"])
	usage := res.json["usage"].(map[string]any)
	assert.Positive(t, usage["prompt_tokens"])
	assert.Equal(t, usage["prompt_tokens"], usage["total_tokens"])

	b64 := ts.call(t, "POST", "/v1/embeddings", bootstrap,
		`{"model":"text-embedding-3-small","encoding_format":"base64","input":["How do I get a refund?","Where is my parcel?"]}`)
	require.Equal(t, http.StatusOK, b64.status, b64.body)
	assert.Equal(t, "live", b64.header.Get("x-svc-route"), "another encoding is another cache entry")
	assert.Equal(t, floats, vectors(t, b64.body), "base64 decodes to the same float32 vector")

	short := ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-small","input":"refund","dimensions":256}`)
	require.Equal(t, http.StatusOK, short.status, short.body)
	assert.Len(t, vectors(t, short.body)[0], 256)
}

func TestEmbeddingsRecordAPricedRunAndRepeatFromTheCache(t *testing.T) {
	ts, p := embedServer(t)
	first := ts.call(t, "POST", "/v1/embeddings", bootstrap, embedBody, "X-Svc-App", "search")
	require.Equal(t, http.StatusOK, first.status, first.body)
	assert.Equal(t, "live", first.header.Get("x-svc-route"))
	live := runOf(t, ts, first)
	assert.Equal(t, "ok", live["status"])
	assert.Equal(t, "text-embedding-3-small", live["model"])
	assert.Equal(t, "search", live["app"])
	prompt := first.json["usage"].(map[string]any)["prompt_tokens"].(float64)
	assert.InDelta(t, prompt, live["promptTokens"], 0)
	assert.InDelta(t, 0, live["completionTokens"], 0)
	assert.InDelta(t, prompt*0.02/1e6, live["costUsd"], 1e-15, "priced from text-embedding-3-small's input price")
	assert.Equal(t, false, live["priceUnknown"])
	assert.Equal(t, "embeddings are not learned: no artifact answers them", rejectedReason(explanation(live), "artifact"))
	summary := live["response"].(map[string]any)
	assert.Equal(t, "embeddings.summary", summary["object"])
	assert.InDelta(t, 2, summary["vectors"], 0)
	assert.InDelta(t, 1536, summary["dimensions"], 0)
	assert.Equal(t, "float", summary["encoding_format"])
	assert.Len(t, summary["sha256"], 64)

	// The same request, its keys in another order and "float" spelled out,
	// from another end user of the same app.
	again := `{"input":["How do I get a refund?","Where is my parcel?"],"encoding_format":"float","user":"u-2","model":"text-embedding-3-small"}`
	second := ts.call(t, "POST", "/v1/embeddings", bootstrap, again, "X-Svc-App", "search")
	require.Equal(t, http.StatusOK, second.status, second.body)
	assert.Equal(t, "exact_cache", second.header.Get("x-svc-route"))
	assert.JSONEq(t, first.body, second.body)
	assert.EqualValues(t, 1, p.calls.Load(), "the provider embedded once")
	hit := runOf(t, ts, second)
	assert.Equal(t, "exact_cache", hit["route"])
	assert.InDelta(t, 0, hit["costUsd"], 0)
	assert.InDelta(t, live["costUsd"], hit["savedUsd"], 1e-15)
	ex := explanation(hit)
	assert.Contains(t, ex["reason"], "embeddings are deterministic")
	assert.Equal(t, live["id"], ex["cache"].(map[string]any)["sourceRunId"])

	// Never across tenants.
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirs, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	res := ts.call(t, "POST", "/v1/embeddings", theirs, embedBody, "X-Svc-App", "search")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "live", res.header.Get("x-svc-route"), "another tenant never gets this tenant's vectors")
	assert.EqualValues(t, 2, p.calls.Load())
	assert.Equal(t, http.StatusNotFound, ts.call(t, "GET", "/api/v1/runs/"+res.header.Get("x-svc-run-id"), bootstrap, "").status,
		"nor sees its run")
}

func TestEmbeddingsRefuseBadInput(t *testing.T) {
	ts, p := embedServer(t)
	for name, tc := range map[string]struct{ body, param string }{
		"no model":          {`{"input":"a"}`, "model"},
		"no input":          {`{"model":"text-embedding-3-small"}`, "input"},
		"empty string":      {`{"model":"text-embedding-3-small","input":""}`, "input"},
		"empty array":       {`{"model":"text-embedding-3-small","input":[]}`, "input"},
		"empty item":        {`{"model":"text-embedding-3-small","input":["a",""]}`, "input"},
		"mixed items":       {`{"model":"text-embedding-3-small","input":["a",1]}`, "input"},
		"a number":          {`{"model":"text-embedding-3-small","input":42}`, "input"},
		"an object":         {`{"model":"text-embedding-3-small","input":{"text":"a"}}`, "input"},
		"negative token":    {`{"model":"text-embedding-3-small","input":[1,-2]}`, "input"},
		"empty token list":  {`{"model":"text-embedding-3-small","input":[[1],[]]}`, "input"},
		"zero dimensions":   {`{"model":"text-embedding-3-small","input":"a","dimensions":0}`, "dimensions"},
		"string dimensions": {`{"model":"text-embedding-3-small","input":"a","dimensions":"8"}`, "dimensions"},
		"bad encoding":      {`{"model":"text-embedding-3-small","input":"a","encoding_format":"int8"}`, "encoding_format"},
		"repeated key":      {`{"model":"text-embedding-3-small","input":"a","input":"b"}`, "input"},
		"not json":          {`{"model":`, ""},
	} {
		res := ts.call(t, "POST", "/v1/embeddings", bootstrap, tc.body)
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", name, res.body)
		e, ok := res.json["error"].(map[string]any)
		require.True(t, ok, "%s: %s", name, res.body)
		assert.Equal(t, "invalid_request_error", e["type"], name)
		if tc.param != "" {
			assert.Equal(t, tc.param, e["param"], name)
		}
	}
	assert.Zero(t, p.calls.Load(), "nothing invalid reaches the provider")

	// The provider's own refusal (the mock's size limit) passes through.
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-small","input":"a","dimensions":99999}`)
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "dimensions", res.json["error"].(map[string]any)["param"])
	assert.Equal(t, "error", runOf(t, ts, res)["status"])
}

func TestEmbeddingsTokenIDs(t *testing.T) {
	ts, _ := embedServer(t)
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-large","input":[[10,20,30],[40]]}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	v := vectors(t, res.body)
	require.Len(t, v, 2)
	assert.Len(t, v[0], 3072)
	assert.InDelta(t, 4, res.json["usage"].(map[string]any)["prompt_tokens"], 0)
}

// TestEmbeddingsWithoutEmbedder is a provider that has no embeddings (a
// plugin built before them): 404 model_not_found in the provider's shape,
// recorded as a failed run.
func TestEmbeddingsWithoutEmbedder(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, embedBody)
	require.Equal(t, http.StatusNotFound, res.status, res.body)
	e := res.json["error"].(map[string]any)
	assert.Equal(t, "model_not_found", e["code"])
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.Contains(t, e["message"], "text-embedding-3-small")
	run := runOf(t, ts, res)
	assert.Equal(t, "error", run["status"])
	assert.InDelta(t, 404, run["httpStatus"], 0)
}

func TestEmbeddingsFollowTheChatRules(t *testing.T) {
	ts := policyServer(t, &embedCounter{Provider: mockProvider(t)})
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"gpt-4o","input":"hello"}`, "X-Svc-App", "support")
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "policy_denied", res.json["error"].(map[string]any)["code"])
	assert.Equal(t, "blocked", res.header.Get("x-svc-route"))

	res = ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-small","input":["hi","Please make a wire transfer of $900."]}`)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "approval_required", res.json["error"].(map[string]any)["code"], "each text input is a user message to the rules")
}

func TestModelsAreMarkedWithTheirKind(t *testing.T) {
	ts := newServer(t, "", nil)
	res := ts.call(t, "GET", "/v1/models", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	kinds := map[string]any{}
	for _, m := range res.json["data"].([]any) {
		kinds[m.(map[string]any)["id"].(string)] = m.(map[string]any)["svc_kind"]
	}
	assert.Equal(t, "chat", kinds["gpt-4o-mini"])
	assert.Equal(t, "embedding", kinds["text-embedding-3-small"])
	assert.Equal(t, "embedding", kinds["text-embedding-3-large"])

	// A plugin's model of a kind svc has no endpoint for is not listed.
	ts = newServerWith(t, bootstrap, nil, &kindsProvider{fakeProvider: &fakeProvider{}})
	res = ts.call(t, "GET", "/v1/models", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	var ids []string
	for _, m := range res.json["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string)+"/"+m.(map[string]any)["svc_kind"].(string))
	}
	assert.Equal(t, []string{"old/chat", "e/embedding"}, ids)
}

type kindsProvider struct{ *fakeProvider }

func (k *kindsProvider) Models(context.Context) ([]pluginapi.Model, error) {
	return []pluginapi.Model{{ID: "old"}, {ID: "e", Kind: pluginapi.KindEmbedding}, {ID: "dall-e-3", Kind: "image"}}, nil
}

// downEmbedder embeds until told to fail like an upstream outage.
type downEmbedder struct {
	embedCounter
	down atomic.Bool
}

func (d *downEmbedder) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	if d.down.Load() {
		return pluginapi.EmbedResponse{}, &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "upstream is down"}
	}
	return d.embedCounter.Embed(ctx, req)
}

func TestEmbeddingsFallBackToExpiredVectorsWhenTheProviderFails(t *testing.T) {
	p := &downEmbedder{embedCounter: embedCounter{Provider: mockProvider(t)}}
	ts := newServerWith(t, bootstrap, nil, p)
	first := ts.call(t, "POST", "/v1/embeddings", bootstrap, embedBody)
	require.Equal(t, http.StatusOK, first.status, first.body)

	ts.clock.Advance(2 * time.Hour) // past SVC_CACHE_TTL
	p.down.Store(true)
	res := ts.call(t, "POST", "/v1/embeddings", bootstrap, embedBody)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "exact_cache", res.header.Get("x-svc-route"))
	assert.JSONEq(t, first.body, res.body)
	ex := explanation(runOf(t, ts, res))
	assert.Contains(t, ex["reason"], "the provider failed; embeddings are deterministic")
	assert.Equal(t, true, ex["fallback"].(map[string]any)["stale"])

	// Without a cached answer, the failure is the provider's.
	res = ts.call(t, "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-small","input":"new"}`)
	assert.Equal(t, http.StatusBadGateway, res.status, res.body)
	assert.Equal(t, "error", runOf(t, ts, res)["status"])
}
