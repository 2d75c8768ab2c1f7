package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

// The instructions, metadata, previous_response_id and store read back
// as the request gave them.
func TestResponsesReadBackAsAsked(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, first := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	res = ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"Again.","previous_response_id":"`+first.ID+`",
		"instructions":[{"role":"developer","content":"Be brief."}],"metadata":{"ticket":"T-1"},"store":false}`)
	require.Equal(t, http.StatusOK, res.status, res.body)

	got := ts.call(t, "GET", "/v1/responses/"+res.json["id"].(string), bootstrap, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	var back map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(got.body), &back))
	assert.JSONEq(t, `[{"role":"developer","content":"Be brief."}]`, string(back["instructions"]))
	assert.JSONEq(t, `{"ticket":"T-1"}`, string(back["metadata"]))
	assert.JSONEq(t, `"`+first.ID+`"`, string(back["previous_response_id"]))
	assert.JSONEq(t, `false`, string(back["store"]))
	assert.JSONEq(t, `null`, string(back["access_programs"]))

	got = ts.call(t, "GET", "/v1/responses/"+first.ID, bootstrap, "")
	require.NoError(t, json.Unmarshal([]byte(got.body), &back))
	assert.JSONEq(t, `null`, string(back["instructions"]))
	assert.JSONEq(t, `{}`, string(back["metadata"]))
	assert.JSONEq(t, `null`, string(back["previous_response_id"]))
	assert.JSONEq(t, `true`, string(back["store"]))
}

// inputItems reads a page of a response's input items.
func inputItems(t *testing.T, ts *testServer, token, id, query string) (response, []map[string]any) {
	t.Helper()
	res := ts.call(t, "GET", "/v1/responses/"+id+"/input_items"+query, token, "")
	var items []map[string]any
	if res.status == http.StatusOK {
		for _, it := range res.json["data"].([]any) {
			items = append(items, it.(map[string]any))
		}
	}
	return res, items
}

func TestResponsesInputItemsList(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, first := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	res, second := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","previous_response_id":"`+first.ID+`","instructions":"Be brief.",
		"input":[{"role":"user","content":"one"},{"role":"user","content":[{"type":"input_text","text":"two"}]},{"role":"user","content":"three"}]}`)
	require.Equal(t, http.StatusOK, res.status, res.body)

	// Newest first by default; the instructions and the earlier conversation are not this response's input.
	res, items := inputItems(t, ts, bootstrap, second.ID, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "list", res.json["object"])
	assert.Equal(t, false, res.json["has_more"])
	require.Len(t, items, 3)
	var texts []string
	for _, it := range items {
		assert.Equal(t, "message", it["type"])
		assert.Equal(t, "user", it["role"])
		texts = append(texts, it["content"].([]any)[0].(map[string]any)["text"].(string))
	}
	assert.Equal(t, []string{"three", "two", "one"}, texts)
	assert.Equal(t, items[0]["id"], res.json["first_id"])
	assert.Equal(t, items[2]["id"], res.json["last_id"])

	res, page := inputItems(t, ts, bootstrap, second.ID, "?order=asc&limit=2")
	require.Len(t, page, 2)
	assert.Equal(t, true, res.json["has_more"])
	assert.Equal(t, items[2]["id"], page[0]["id"])
	_, rest := inputItems(t, ts, bootstrap, second.ID, "?order=asc&limit=2&after="+page[1]["id"].(string))
	require.Len(t, rest, 1)
	assert.Equal(t, items[0]["id"], rest[0]["id"])

	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?order=up"} {
		res, _ := inputItems(t, ts, bootstrap, second.ID, q)
		assert.Equal(t, http.StatusBadRequest, res.status, q)
		assert.Equal(t, strings.SplitN(strings.TrimPrefix(q, "?"), "=", 2)[0], res.json["error"].(map[string]any)["param"], q)
	}
	res, _ = inputItems(t, ts, bootstrap, "resp_aaaaaaaaaaaaaaaaaaaa", "")
	assert.Equal(t, http.StatusNotFound, res.status)
}

func TestResponsesDelete(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, first := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	runID := res.header.Get("x-svc-run-id")

	del := ts.call(t, "DELETE", "/v1/responses/"+first.ID, bootstrap, "")
	require.Equal(t, http.StatusOK, del.status, del.body)
	assert.JSONEq(t, `{"id":"`+first.ID+`","object":"response","deleted":true}`, del.body)

	for name, res := range map[string]response{
		"get":         ts.call(t, "GET", "/v1/responses/"+first.ID, bootstrap, ""),
		"input_items": ts.call(t, "GET", "/v1/responses/"+first.ID+"/input_items", bootstrap, ""),
		"delete":      ts.call(t, "DELETE", "/v1/responses/"+first.ID, bootstrap, ""),
		"cancel":      ts.call(t, "POST", "/v1/responses/"+first.ID+"/cancel", bootstrap, ""),
	} {
		assert.Equal(t, http.StatusNotFound, res.status, name)
		assert.Equal(t, "not_found_error", res.json["error"].(map[string]any)["type"], name)
	}
	prev := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"hi","previous_response_id":"`+first.ID+`"}`)
	assert.Equal(t, http.StatusBadRequest, prev.status, prev.body)
	assert.Equal(t, "previous_response_not_found", prev.errorCode())
	ref := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"`+first.Output[0].ID+`"}]}`)
	assert.Equal(t, http.StatusBadRequest, ref.status, ref.body)

	// The run stays, evidence of the call, and the deletion is audited.
	assert.Equal(t, runID, ts.run(t, bootstrap, runID)["run"].(map[string]any)["id"])
	audit := ts.call(t, "GET", "/api/v1/audit", bootstrap, "")
	assert.Contains(t, audit.body, `"response.delete"`)
	assert.Contains(t, audit.body, first.ID)
}

func TestResponsesOfAnotherTenantCannotBeDeletedOrListed(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	res, theirs := ts.respond(t, theirToken, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)

	assert.Equal(t, http.StatusNotFound, ts.call(t, "DELETE", "/v1/responses/"+theirs.ID, bootstrap, "").status)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "GET", "/v1/responses/"+theirs.ID+"/input_items", bootstrap, "").status)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/v1/responses/"+theirs.ID+"/cancel", bootstrap, "").status)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/v1/responses/"+theirs.ID, theirToken, "").status, "still theirs")
}

// svc runs no response in the background: there is none to cancel.
func TestResponsesCancelIsRefused(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, first := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	cancel := ts.call(t, "POST", "/v1/responses/"+first.ID+"/cancel", bootstrap, "")
	assert.Equal(t, http.StatusBadRequest, cancel.status, cancel.body)
	e := cancel.json["error"].(map[string]any)
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.Contains(t, e["message"], "background=true")
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/v1/responses/resp_aaaaaaaaaaaaaaaaaaaa/cancel", bootstrap, "").status)

	bg := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"hi","background":true}`)
	assert.Equal(t, http.StatusBadRequest, bg.status)
	assert.Equal(t, "background", bg.json["error"].(map[string]any)["param"])
}

// Where the tenant's redaction is on, the instructions and metadata kept
// with the run are masked like its request.
func TestResponsesOriginIsRedacted(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	require.Equal(t, http.StatusOK, ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"redaction","value":true}`).status)
	res := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"Say hello.",
		"instructions":"Write to bob@example.com.","metadata":{"owner":"carol@example.com"}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, "bob@example.com", "the caller gets its answer as it was")
	got := ts.call(t, "GET", "/v1/responses/"+res.json["id"].(string), bootstrap, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	assert.NotContains(t, got.body, "bob@example.com")
	assert.NotContains(t, got.body, "carol@example.com")
	assert.Contains(t, got.json["instructions"], "Write to")
}
