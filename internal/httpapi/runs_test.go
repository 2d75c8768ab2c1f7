package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

// chatRun makes one call and returns its run id.
func (ts *testServer) chatRun(t *testing.T, token, body string, headers ...string) string {
	t.Helper()
	res := ts.call(t, "POST", "/v1/chat/completions", token, body, headers...)
	require.NotEmpty(t, res.header.Get("x-svc-run-id"), res.body)
	return res.header.Get("x-svc-run-id")
}

func runIDs(res response) []string {
	var out []string
	for _, r := range res.json["runs"].([]any) {
		out = append(out, r.(map[string]any)["id"].(string))
	}
	return out
}

func TestListRuns(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	var made []string
	for i := range 5 {
		made = append(made, ts.chatRun(t, bootstrap, strings.Replace(triage, "this month", fmt.Sprint("in month ", i), 1)))
	}

	res := ts.call(t, "GET", "/api/v1/runs", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.InDelta(t, 5, res.json["total"], 0)
	got := runIDs(res)
	require.Len(t, got, 5)
	for i := range got {
		assert.Equal(t, made[len(made)-1-i], got[i], "newest first")
	}
	first := res.json["runs"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "route", "status", "model", "app", "agent", "subject", "mode", "costUsd", "latencyMs", "createdAt", "routeExplanation"} {
		assert.Contains(t, first, k)
	}
	assert.NotContains(t, first, "request", "bodies are in the detail only")

	page := ts.call(t, "GET", "/api/v1/runs?limit=2&offset=1", bootstrap, "")
	assert.Equal(t, got[1:3], runIDs(page))
	assert.InDelta(t, 5, page.json["total"], 0, "total counts every match, not the page")

	assert.Len(t, runIDs(ts.call(t, "GET", "/api/v1/runs?route=live&status=ok", bootstrap, "")), 5)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/runs?status=error", bootstrap, "").json["runs"])
	assert.Empty(t, ts.call(t, "GET", "/api/v1/runs?route=exact_cache", bootstrap, "").json["runs"])

	for _, q := range []string{"route=teleport", "status=meh", "limit=-1", "limit=ten", "offset=-3"} {
		bad := ts.call(t, "GET", "/api/v1/runs?"+q, bootstrap, "")
		assert.Equal(t, http.StatusBadRequest, bad.status, q)
		assert.NotEmpty(t, bad.json["error"].(map[string]any)["param"], q)
	}
}

func TestListRunsFiltersByStatus(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{chatErr: context.DeadlineExceeded})
	failed := ts.chatRun(t, bootstrap, triage)
	res := ts.call(t, "GET", "/api/v1/runs?status=error", bootstrap, "")
	assert.Equal(t, []string{failed}, runIDs(res))
	assert.Empty(t, ts.call(t, "GET", "/api/v1/runs?status=ok", bootstrap, "").json["runs"])
}

func TestReplayBundle(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	id := ts.chatRun(t, bootstrap, triage, "X-Svc-App", "support")
	res := ts.call(t, "GET", "/api/v1/runs/"+id+"/replay-bundle", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	b := res.json
	assert.JSONEq(t, triage, mustMarshal(t, b["request"]))
	assert.Equal(t, "chat.completion", b["response"].(map[string]any)["object"])
	assert.Equal(t, "mock", b["provider"])
	assert.Equal(t, "gpt-4o-mini", b["model"])
	assert.Equal(t, "allow", b["verdict"].(map[string]any)["decision"])
	assert.Len(t, b["events"], 3)
	assert.Equal(t, true, b["integrity"].(map[string]any)["ok"])
	assert.Equal(t, id, b["run"].(map[string]any)["id"])
}

func TestFeedback(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	id := ts.chatRun(t, bootstrap, triage)
	res := ts.call(t, "POST", "/api/v1/runs/"+id+"/feedback", bootstrap, `{"type":"rating","rating":-1,"correction":"bug"}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	fb := res.json["feedback"].(map[string]any)
	assert.Equal(t, id, fb["runId"])
	assert.InDelta(t, -1, fb["rating"], 0)
	assert.Equal(t, "bug", fb["correction"])
	res = ts.call(t, "POST", "/api/v1/runs/"+id+"/feedback", bootstrap, `{"type":"rating","rating":1.0}`)
	require.Equal(t, http.StatusCreated, res.status, "1.0 is the number 1: %s", res.body)

	d := ts.run(t, bootstrap, id)
	events := d["events"].([]any)
	require.Len(t, events, 5, "each rating is appended to the run's trace")
	assert.Equal(t, "feedback", events[3].(map[string]any)["type"])
	assert.Equal(t, true, ts.call(t, "GET", "/api/v1/runs/"+id+"/integrity", bootstrap, "").json["ok"])

	for body, param := range map[string]string{
		`{"type":"stars","rating":1}`:                 "type",
		`{"rating":1}`:                                "type",
		`{"type":"rating","rating":5}`:                "rating",
		`{"type":"rating","rating":0}`:                "rating",
		`{"type":"rating","rating":0.5}`:              "rating",
		`{"type":"rating","rating":"1"}`:              "rating",
		`{"type":"rating","rating":1,"correction":7}`: "correction",
		`{"type":"rating","rating":1,"extra":true}`:   "extra",
	} {
		bad := ts.call(t, "POST", "/api/v1/runs/"+id+"/feedback", bootstrap, body)
		assert.Equal(t, http.StatusBadRequest, bad.status, body)
		assert.Equal(t, param, bad.json["error"].(map[string]any)["param"], body)
	}
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaa/feedback", bootstrap, `{"type":"rating","rating":1}`).status)
}

func TestTrace(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	id := ts.chatRun(t, bootstrap, triage)
	res := ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"tool.called","payload":{"name":"lookup_invoice","args":{"id":"inv_1"}}}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	ev := res.json["event"].(map[string]any)
	assert.InDelta(t, 3, ev["seq"], 0, "appended after the three gateway events")
	assert.Equal(t, "tool.called", ev["type"])
	assert.Len(t, ev["hash"], 64)

	res = ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"tool.completed","payload":{"name":"lookup_invoice","cached":false}}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	integrity := ts.call(t, "GET", "/api/v1/runs/"+id+"/integrity", bootstrap, "").json
	assert.Equal(t, true, integrity["ok"])
	assert.InDelta(t, 5, integrity["events"], 0)

	events := ts.run(t, bootstrap, id)["events"].([]any)
	assert.Equal(t, events[3].(map[string]any)["hash"], events[4].(map[string]any)["prevHash"], "each event links to the one before")

	for _, body := range []string{
		`{"runId":"` + id + `","type":"tool.called"}`,
		`{"runId":"` + id + `","type":"tool.called","payload":[1]}`,
		`{"runId":"` + id + `","type":"tool.called","payload":"x"}`,
		`{"runId":"` + id + `","type":"tool.called","payload":null}`,
		`{"runId":"` + id + `","type":"note","payload":null}`,
		`{"runId":"` + id + `","type":"note","payload":[1]}`,
		`{"runId":"` + id + `","type":"tool.called","payload":{"name":"t","sideEffectLevel":5}}`,
		`{"runId":"` + id + `","type":"side_effect.planned","payload":{"toolName":"t","level":-1}}`,
		`{"runId":"` + id + `","type":"side_effect.planned","payload":{"toolName":"t","level":"4"}}`,
		`{"runId":"` + id + `","type":"tool.called","payload":{"name":"t","sideEffectLevel":2.5}}`,
		`{"runId":"` + id + `","type":"tool.called","payload":{"name":7}}`,
		`{"runId":"` + id + `","type":"","payload":{}}`,
		`{"runId":"` + id + `","type":"` + strings.Repeat("t", 101) + `","payload":{}}`,
		`{"type":"tool.called","payload":{}}`,
		`{"runId":"` + id + `","type":"tool.called","payload":{},"more":1}`,
		`not json`,
	} {
		assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", "/api/v1/trace", bootstrap, body).status, body)
	}
	assert.InDelta(t, 5, ts.call(t, "GET", "/api/v1/runs/"+id+"/integrity", bootstrap, "").json["events"], 0, "nothing refused was appended")
	bad := ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"tool.called","payload":{"name":"t","level":"4"}}`)
	assert.Equal(t, "payload.level", bad.json["error"].(map[string]any)["param"], bad.body)
	bad = ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"tool.called","payload":[1]}`)
	assert.Equal(t, "payload", bad.json["error"].(map[string]any)["param"], bad.body)
	assert.Contains(t, bad.json["error"].(map[string]any)["message"], "must be a JSON object", bad.body)
	res = ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"tool.called","payload":{"name":"t","sideEffectLevel":4.0}}`)
	assert.Equal(t, http.StatusCreated, res.status, "4.0 is the level 4: %s", res.body)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"run_aaaaaaaaaaaaaaaaaaaa","type":"x","payload":{}}`).status)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"nonsense","type":"x","payload":{}}`).status)
}

func TestAgents(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	ts.chatRun(t, bootstrap, triage, "X-Svc-Agent", "triage-bot")
	ts.chatRun(t, bootstrap, triage, "X-Svc-Agent", "triage-bot")
	ts.chatRun(t, bootstrap, triage, "X-Svc-Agent", "refund-bot")
	ts.chatRun(t, bootstrap, triage) // no agent

	res := ts.call(t, "GET", "/api/v1/agents", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status)
	agents := map[string]map[string]any{}
	for _, a := range res.json["agents"].([]any) {
		agents[a.(map[string]any)["name"].(string)] = a.(map[string]any)
	}
	require.Len(t, agents, 2)
	assert.InDelta(t, 2, agents["triage-bot"]["runCount"], 0)
	assert.InDelta(t, 1, agents["refund-bot"]["runCount"], 0)
	assert.Equal(t, "unverified", agents["triage-bot"]["trust"])
	assert.NotEmpty(t, agents["triage-bot"]["firstSeen"])
	assert.NotEmpty(t, agents["triage-bot"]["lastSeen"])
}

// Another tenant's run is "not found" on every endpoint, exactly like a run
// that does not exist, and never listed.
func TestRunsTenantIsolation(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Observe})
	require.NoError(t, err)

	theirs := ts.chatRun(t, theirToken, triage, "X-Svc-Agent", "their-agent")
	mine := ts.chatRun(t, bootstrap, triage)
	unknown := "run_aaaaaaaaaaaaaaaaaaaa"

	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/v1/runs/%s", ""},
		{"GET", "/api/v1/runs/%s/integrity", ""},
		{"GET", "/api/v1/runs/%s/replay-bundle", ""},
		{"POST", "/api/v1/runs/%s/feedback", `{"type":"rating","rating":1}`},
		{"POST", "/api/v1/trace", `{"runId":"%s","type":"x","payload":{}}`},
	} {
		path, body := tc.path, tc.body
		foreign := ts.call(t, tc.method, strings.Replace(path, "%s", theirs, 1), bootstrap, strings.Replace(body, "%s", theirs, 1))
		missing := ts.call(t, tc.method, strings.Replace(path, "%s", unknown, 1), bootstrap, strings.Replace(body, "%s", unknown, 1))
		assert.Equal(t, http.StatusNotFound, foreign.status, tc.path)
		assert.Equal(t, missing.body, foreign.body, tc.path)
	}
	assert.Equal(t, []string{mine}, runIDs(ts.call(t, "GET", "/api/v1/runs", bootstrap, "")))
	assert.Equal(t, []string{theirs}, runIDs(ts.call(t, "GET", "/api/v1/runs", theirToken, "")))
	assert.Empty(t, ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"])
	assert.Len(t, ts.call(t, "GET", "/api/v1/agents", theirToken, "").json["agents"], 1)

	run := ts.run(t, theirToken, theirs)["run"].(map[string]any)
	assert.Equal(t, "observe", run["mode"], "the key's mode is recorded")
	assert.Equal(t, 0, len(ts.call(t, "GET", "/api/v1/runs?status=error", theirToken, "").json["runs"].([]any)))
}

func TestListRunsFilters(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + traceID + "-00f067aa0ba902b7-01"
	created := func(id string) time.Time {
		res := ts.call(t, "GET", "/api/v1/runs/"+id, bootstrap, "")
		at, err := time.Parse(time.RFC3339Nano, res.json["run"].(map[string]any)["createdAt"].(string))
		require.NoError(t, err)
		return at
	}
	support := ts.chatRun(t, bootstrap, triage, "X-Svc-App", "support", "X-Svc-Agent", "triage-bot", "traceparent", traceparent)
	// A run's time is kept to the millisecond: the next run must start in a
	// later one for since and until to tell the two apart.
	for first := created(support); !time.Now().Truncate(time.Millisecond).After(first); {
		runtime.Gosched()
	}
	other := ts.chatRun(t, bootstrap, strings.Replace(triage, "charged twice", "billed 100% too much", 1), "X-Svc-App", "billing")
	bigger := ts.chatRun(t, bootstrap, strings.Replace(triage, "gpt-4o-mini", "gpt-4o", 1), "X-Svc-App", "billing")

	list := func(q string) []string {
		t.Helper()
		res := ts.call(t, "GET", "/api/v1/runs?"+q, bootstrap, "")
		require.Equal(t, http.StatusOK, res.status, res.body)
		ids := runIDs(res)
		assert.InDelta(t, len(ids), res.json["total"], 0, q)
		return ids
	}
	assert.Equal(t, []string{support}, list("app=support"))
	assert.Equal(t, []string{support}, list("agent=triage-bot"))
	assert.Equal(t, []string{bigger}, list("model=gpt-4o"))
	assert.Equal(t, []string{bigger, other}, list("app=billing"))
	assert.Equal(t, []string{support}, list("traceId="+traceID))
	assert.Equal(t, []string{support}, list("traceId="+strings.ToUpper(traceID)), "a trace id is hex, in either case")
	assert.Equal(t, []string{other}, list("q=100%25+TOO"), "q searches the request's text, case-insensitive, % literal")
	assert.Empty(t, list("q=1%25much"), "% is no wildcard")
	assert.Equal(t, []string{support}, list("q=TRIAGE-bot"), "q searches the agent")
	assert.Equal(t, []string{other}, list("q="+other), "q searches the id")

	since := created(other).Format(time.RFC3339Nano)
	assert.NotContains(t, list("since="+url.QueryEscape(since)), support)
	assert.Contains(t, list("since="+url.QueryEscape(since)), other, "since is included")
	assert.NotContains(t, list("until="+url.QueryEscape(since)), other, "until is not")
	assert.Contains(t, list("until="+url.QueryEscape(since)), support)

	// Another tenant's runs never match, and it matches none of these.
	o, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), o.ID, auth.NewKey{Name: "theirs", Mode: auth.Observe})
	require.NoError(t, err)
	theirs := ts.chatRun(t, theirToken, triage, "X-Svc-App", "support", "X-Svc-Agent", "triage-bot", "traceparent", traceparent)
	assert.Equal(t, []string{support}, list("app=support&q=charged"))
	assert.Equal(t, []string{support}, list("traceId="+traceID), "another tenant's run of the same trace is not found")
	assert.Equal(t, []string{theirs}, runIDs(ts.call(t, "GET", "/api/v1/runs?app=support&agent=triage-bot&q=charged", theirToken, "")))

	for _, tc := range []struct{ q, param string }{
		{"since=yesterday", "since"},
		{"until=2026-13-01T00:00:00Z", "until"},
		{"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
		{"q=" + strings.Repeat("x", 201), "q"},
		{"app=" + strings.Repeat("x", 201), "app"},
		{"agent=%FF", "agent"},
		{"model=" + strings.Repeat("x", 201), "model"},
		{"traceId=4bf92f35", "traceId"},
		{"traceId=" + strings.Repeat("0", 32), "traceId"},
	} {
		bad := ts.call(t, "GET", "/api/v1/runs?"+tc.q, bootstrap, "")
		assert.Equal(t, http.StatusBadRequest, bad.status, tc.q)
		assert.Equal(t, tc.param, bad.json["error"].(map[string]any)["param"], tc.q)
	}
}
