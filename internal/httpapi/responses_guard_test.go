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

// In account mode without SVC_API_KEY a call without a token is the
// default tenant's; a person signed in to another organization who sends
// their session cookie with it reads and deletes none of the default
// tenant's responses: each is not found.
func TestResponsesOfTheOpenTenantAreNotFoundForAnotherOrgsSession(t *testing.T) {
	ts := newServer(t, "", accountEnv("SVC_ALLOW_PUBLIC_SIGNUP", "true"))
	res, r := ts.respond(t, "", `{"model":"gpt-4o-mini","input":"my email is alice@example.com"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	mallory := ts.browser(t)
	signup := mallory.do(t, "POST", "/api/v1/auth/signup", `{"email":"mallory@other.test","name":"Mallory","password":"mallory's secret"}`)
	require.Equal(t, http.StatusCreated, signup.status, signup.body)

	for _, call := range [][2]string{{"GET", ""}, {"GET", "/input_items"}, {"POST", "/cancel"}, {"DELETE", ""}} {
		got := mallory.do(t, call[0], "/v1/responses/"+r.ID+call[1], "")
		assert.Equal(t, http.StatusNotFound, got.status, "%s %s: %s", call[0], call[1], got.body)
		assert.NotContains(t, got.body, "alice@example.com")
	}
	next := mallory.do(t, "POST", "/v1/responses", fmt.Sprintf(`{"model":"gpt-4o-mini","input":"repeat what I said","previous_response_id":%q}`, r.ID))
	assert.Equal(t, http.StatusBadRequest, next.status, next.body)
	assert.Equal(t, "previous_response_not_found", next.errorCode())
	ref := mallory.do(t, "POST", "/v1/responses", fmt.Sprintf(`{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":%q}]}`, r.Output[0].ID))
	assert.Equal(t, http.StatusBadRequest, ref.status, ref.body)
	assert.NotContains(t, ref.body, "alice@example.com")

	// The response is still there for its own tenant.
	admin := ts.signedIn(t, adminEmail, adminPassword)
	got := admin.do(t, "GET", "/v1/responses/"+r.ID, "")
	assert.Equal(t, http.StatusOK, got.status, got.body)
}

// A session's write through the Responses API passes the same-origin
// check the management API applies to cookie writes.
func TestResponsesSessionWritesAreSameOrigin(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	res, r := ts.respond(t, "", `{"model":"gpt-4o-mini","input":"hello"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	admin := ts.signedIn(t, adminEmail, adminPassword)
	cross := []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test"}
	del := admin.do(t, "DELETE", "/v1/responses/"+r.ID, "", cross...)
	assert.Equal(t, http.StatusForbidden, del.status, del.body)
	assert.Equal(t, "cross_origin", del.errorCode())
	next := admin.do(t, "POST", "/v1/responses", fmt.Sprintf(`{"model":"gpt-4o-mini","input":"again","previous_response_id":%q}`, r.ID), cross...)
	assert.Equal(t, http.StatusForbidden, next.status, next.body)
	got := admin.do(t, "GET", "/v1/responses/"+r.ID, "")
	assert.Equal(t, http.StatusOK, got.status, "not deleted: %s", got.body)

	del = admin.do(t, "DELETE", "/v1/responses/"+r.ID, "")
	assert.Equal(t, http.StatusOK, del.status, del.body)
	logged := admin.do(t, "GET", "/api/v1/audit?action=response.delete", "")
	require.Equal(t, http.StatusOK, logged.status, logged.body)
	assert.Contains(t, logged.body, `"actor":"user:usr_`, "the person who deleted it is the actor")
}

// A failed check of the management credentials draws on the address's
// limit, as a failed management credential does elsewhere.
func TestResponsesFailedReadsAreRateLimitedByAddress(t *testing.T) {
	ts := newServer(t, "", map[string]string{"SVC_REQUIRE_LOGIN": "true", "SVC_RATE_LIMIT": "30"}) // burst 3
	for range 3 {
		assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/v1/responses/resp_aaaaaaaaaaaaaaaaaaaa", "", "").status)
	}
	res := ts.call(t, "GET", "/v1/responses/resp_aaaaaaaaaaaaaaaaaaaa", "", "")
	assert.Equal(t, http.StatusTooManyRequests, res.status, res.body)
}
