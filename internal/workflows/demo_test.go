package workflows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/workflows"
)

// fakeGateway records the calls of a replay; it blocks the wire-transfer
// ticket as the example rule would, and fails call number failAt.
type fakeGateway struct {
	ids    []auth.Identity
	bodies [][]byte
	failAt int
}

func (g *fakeGateway) Chat(_ context.Context, id *auth.Identity, body []byte) (string, string, error) {
	g.ids = append(g.ids, *id)
	g.bodies = append(g.bodies, body)
	n := len(g.bodies)
	runID := "run_" + string(rune('a'+n%26))
	switch {
	case n == g.failAt:
		return "", "", errs.E(errs.Upstream, "provider_error", "the provider is down")
	case bytes.Contains(body, []byte("wire transfer")):
		return runID, ledger.RouteBlocked, errs.E(errs.Forbidden, "approval_required", "held")
	}
	return runID, ledger.RouteLive, nil
}

func userContent(t *testing.T, body []byte) string {
	t.Helper()
	var req workflows.ChatRequest
	require.NoError(t, json.Unmarshal(body, &req))
	return req.Messages[len(req.Messages)-1].Content
}

func TestReplayDemoSendsTheDemoTrafficAsTheWorkflow(t *testing.T) {
	svc, _, synced := newService(t)
	gw := &fakeGateway{}
	caller := &auth.Identity{TenantID: "t_acme", KeyID: "key_1", Via: auth.ViaKey, Mode: auth.Observe, Admin: true,
		App: "mine", Agent: "someone", Subject: "x"}
	runs, err := svc.ReplayDemo(context.Background(), gw, caller, true)
	require.NoError(t, err)

	def := workflows.SupportTriage().Definition
	samples := len(def.Samples)
	require.Len(t, gw.bodies, samples+2+workflows.DemoTickets)
	assert.Len(t, runs, len(gw.bodies), "a blocked call is a run like the others")
	assert.Positive(t, synced.n, "the runs are readable once it answers")
	for _, id := range gw.ids {
		assert.Equal(t, auth.Identity{TenantID: "t_acme", KeyID: "key_1", Via: auth.ViaKey, Mode: auth.Optimize, Admin: true,
			App: def.App, Agent: def.Agent}, id, "as the workflow's app and agent, in the caller's tenant, caches and rules acting")
	}
	for i, sm := range def.Samples {
		assert.Contains(t, userContent(t, gw.bodies[i]), sm.Input["body"])
	}
	assert.Equal(t, gw.bodies[0], gw.bodies[samples], "the first sample again: an exact-cache hit")
	assert.Contains(t, userContent(t, gw.bodies[samples+1]), "wire transfer")
	seen := map[string]bool{}
	for _, b := range gw.bodies[samples+2:] {
		c := userContent(t, b)
		assert.False(t, seen[c], "each made-up ticket is new to the cache")
		seen[c] = true
	}

	again, err := workflows.DemoTraffic(true)
	require.NoError(t, err)
	assert.Equal(t, gw.bodies, again, "the same traffic at every load")
}

// A real provider is asked only the samples, the repeat and the wire
// transfer: loading the demo must not make hundreds of paid calls.
func TestReplayDemoWithoutBulkSendsOnlyTheShowcase(t *testing.T) {
	svc, _, _ := newService(t)
	gw := &fakeGateway{}
	runs, err := svc.ReplayDemo(context.Background(), gw, &auth.Identity{TenantID: tenant.DefaultID, Via: auth.ViaOpen, Admin: true}, false)
	require.NoError(t, err)
	samples := len(workflows.SupportTriage().Definition.Samples)
	assert.Len(t, gw.bodies, samples+2)
	assert.Len(t, runs, samples+2)
	assert.Equal(t, gw.bodies[0], gw.bodies[samples], "still an exact-cache hit")
}

func TestReplayDemoStopsAtAFailure(t *testing.T) {
	svc, _, _ := newService(t)
	gw := &fakeGateway{failAt: 3}
	runs, err := svc.ReplayDemo(context.Background(), gw, &auth.Identity{TenantID: tenant.DefaultID, Via: auth.ViaOpen, Admin: true}, true)
	assert.Equal(t, errs.Upstream, errs.KindOf(err))
	assert.Len(t, runs, 2, "the runs recorded before it")
	assert.Len(t, gw.bodies, 3, "nothing sent after it")
}
