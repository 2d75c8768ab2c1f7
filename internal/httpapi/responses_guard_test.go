package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In account mode a call without credentials may use the gateway, but
// never read what others sent through it: a stored response, the
// conversation of previous_response_id and referenced items need
// credentials the management API accepts for reading runs.
func TestResponsesStoredRunsNeedManagementCredentials(t *testing.T) {
	ts := newServer(t, "", map[string]string{"SVC_REQUIRE_LOGIN": "true"})
	res, r := ts.respond(t, "", `{"model":"gpt-4o-mini","input":"my email is alice@example.com"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	for _, token := range []string{"", "anything"} {
		got := ts.call(t, "GET", "/v1/responses/"+r.ID, token, "")
		assert.Equal(t, http.StatusUnauthorized, got.status, "token %q: %s", token, got.body)
		assert.NotContains(t, got.body, "alice@example.com")
		next, _ := ts.respond(t, token, fmt.Sprintf(`{"model":"gpt-4o-mini","input":"and again","previous_response_id":%q}`, r.ID))
		assert.Equal(t, http.StatusUnauthorized, next.status, "token %q: %s", token, next.body)
		ref, _ := ts.respond(t, token, fmt.Sprintf(`{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":%q}]}`, r.Output[0].ID))
		assert.Equal(t, http.StatusUnauthorized, ref.status, "token %q: %s", token, ref.body)
		items := ts.call(t, "GET", "/v1/responses/"+r.ID+"/input_items", token, "")
		assert.Equal(t, http.StatusUnauthorized, items.status, "token %q: %s", token, items.body)
		assert.NotContains(t, items.body, "alice@example.com")
		del := ts.call(t, "DELETE", "/v1/responses/"+r.ID, token, "")
		assert.Equal(t, http.StatusUnauthorized, del.status, "token %q: %s", token, del.body)
		cancel := ts.call(t, "POST", "/v1/responses/"+r.ID+"/cancel", token, "")
		assert.Equal(t, http.StatusUnauthorized, cancel.status, "token %q: %s", token, cancel.body)
	}
}

// A run that was no chat call, such as an embeddings call, is no response.
func TestResponsesAnEmbeddingsRunIsNoResponse(t *testing.T) {
	ts := newServer(t, "", nil)
	emb := ts.call(t, "POST", "/v1/embeddings", "", embedBody)
	require.Equal(t, http.StatusOK, emb.status, emb.body)
	id := "resp_" + strings.TrimPrefix(emb.header.Get("x-svc-run-id"), "run_")
	got := ts.call(t, "GET", "/v1/responses/"+id, "", "")
	assert.Equal(t, http.StatusNotFound, got.status, got.body)
	for _, call := range [][2]string{{"GET", "/input_items"}, {"DELETE", ""}, {"POST", "/cancel"}} {
		got := ts.call(t, call[0], "/v1/responses/"+id+call[1], "", "")
		assert.Equal(t, http.StatusNotFound, got.status, "%s %s: %s", call[0], call[1], got.body)
	}
}

// A stored json_schema format of any shape reads back as JSON, never as an
// empty 200.
func TestResponsesStoredSchemaFormatReadsBack(t *testing.T) {
	ts := newServer(t, "", nil)
	chat := ts.call(t, "POST", "/v1/chat/completions", "",
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{}}}`)
	id := "resp_" + strings.TrimPrefix(chat.header.Get("x-svc-run-id"), "run_")
	require.NotEqual(t, "resp_", id, chat.body)
	got := ts.call(t, "GET", "/v1/responses/"+id, "", "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	assert.NotEmpty(t, got.json, "a JSON body: %q", got.body)
}

// One request may reference at most 100 stored items: each may cost a read.
func TestResponsesReferencesAreBounded(t *testing.T) {
	ts := newServer(t, "", nil)
	items := make([]string, 101)
	for i := range items {
		items[i] = fmt.Sprintf(`{"type":"item_reference","id":"msg_%d"}`, i)
	}
	res, _ := ts.respond(t, "", `{"model":"gpt-4o-mini","input":[`+strings.Join(items, ",")+`]}`)
	assert.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Contains(t, res.body, "at most 100")
}

// One flat array of token ids is one input, however long.
func TestEmbeddingsOneLongTokenArrayIsOneInput(t *testing.T) {
	ts := newServer(t, "", nil)
	ids := make([]string, 3000)
	for i := range ids {
		ids[i] = "1"
	}
	res := ts.call(t, "POST", "/v1/embeddings", "", `{"model":"text-embedding-3-small","input":[`+strings.Join(ids, ",")+`]}`)
	assert.Equal(t, http.StatusOK, res.status, res.body)
}
