package governance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// replicaOf is a world whose governor shares agents with others, as the
// replicas of one database do, following them through its own feed.
func replicaOf(t *testing.T, agents *memAgents, clock *fakeclock.Clock, refresh time.Duration) (*world, *changestest.Feed) {
	t.Helper()
	w := &world{approvals: &memApprovals{}, audit: &audittest.Memory{}, agents: agents, notes: &notes{}, clock: clock}
	logger := hclog.NewNullLogger()
	w.gov = governance.New(governance.Options{
		Policies:  engine(t, decideRules),
		Approvals: approval.NewService(w.approvals, fixedSettings{ttl: exceptionTTL, pending: pendingLimit}, clock.Now),
		Audit:     audit.NewLog(w.audit, logger, clock.Now),
		Agents:    agents,
		Now:       clock.Now,
		Logger:    logger,
	})
	feed := changestest.New()
	w.gov.Replicate(feed, refresh)
	return w, feed
}

// relay hands the notices one replica sent since the last relay to another.
func relay(from, to *changestest.Feed, sent *int) {
	notices := from.Notices()
	for _, n := range notices[*sent:] {
		to.Publish(n.Topic, n.Payload)
	}
	*sent = len(notices)
}

// Two replicas judge one agent: each decision moves the one standing they
// share, and the denies spread over both restrict it on both.
func TestReplicasMoveOneStanding(t *testing.T) {
	agents := newMemAgents()
	clock := fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC())
	a, feedA := replicaOf(t, agents, clock, time.Minute)
	b, feedB := replicaOf(t, agents, clock, time.Minute)
	bot := key()
	bot.Agent = "bot"
	docs := webAction(bot, "docs.example.com", "https://docs.example.com/", nil)
	admin := webAction(bot, "shop.example.com", "https://shop.example.com/admin", nil)
	sentA, sentB := 0, 0

	require.Equal(t, policy.Allow, b.decide(t, docs).Verdict.Decision, "b has read the agent: unverified")
	a.decide(t, admin)
	b.decide(t, admin)
	d := a.decide(t, admin)
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3, Decisions: 4}, *d.Standing,
		"every replica's decisions move the standing")
	assert.Equal(t, 4, agents.moves)
	relay(feedA, feedB, &sentA)
	relay(feedB, feedA, &sentB)
	notices := feedA.Notices()
	require.NotEmpty(t, notices)
	assert.Equal(t, changestest.Notice{Topic: "agents", Payload: tenantA + " bot", Deadline: true}, notices[len(notices)-1],
		"a's move restricted the agent, and a said so")

	for _, r := range []*world{a, b} {
		d := r.decide(t, docs)
		assert.Equal(t, policy.Deny, d.Verdict.Decision, "both replicas see the agent restricted")
		assert.Equal(t, "restricted-agents", d.Verdict.Rules[len(d.Verdict.Rules)-1].ID)
	}
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustRestricted, Denies: 5, Decisions: 6}, agents.book[agentKey{tenantA, "bot"}])

	// The standing is stored by the decision: a traced call's save is
	// not written over it.
	a.gov.SaveStanding(context.Background(), tenantA, "bot", ledger.NewStanding(), clock.Now())
	assert.Empty(t, agents.saved)
}

// A replica that missed the notice judges by its copy until its own next
// move, or until the copy is older than the refresh bound; a notice of
// everything (the feed reconnected) drops every copy.
func TestAMissedTrustNoticeIsHealedByTheRefreshBound(t *testing.T) {
	agents := newMemAgents()
	clock := fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC())
	a, _ := replicaOf(t, agents, clock, time.Minute)
	b, feedB := replicaOf(t, agents, clock, time.Minute)
	// restrictedOnA has b read the agent, then a restrict it; a's notices
	// are lost.
	restrictedOnA := func(name string) action {
		id := key()
		id.Agent = name
		docs := webAction(id, "docs.example.com", "https://docs.example.com/", nil)
		require.Equal(t, policy.Allow, b.decide(t, docs).Verdict.Decision)
		for range ledger.RestrictAfter {
			a.decide(t, webAction(id, "shop.example.com", "https://shop.example.com/admin", nil))
		}
		return docs
	}

	docs := restrictedOnA("bot")
	assert.Equal(t, policy.Allow, b.decide(t, docs).Verdict.Decision, "b judges by its copy")
	assert.Equal(t, policy.Deny, b.decide(t, docs).Verdict.Decision, "until its own move reads the shared standing")

	docs = restrictedOnA("bot2")
	clock.Advance(time.Minute)
	assert.Equal(t, policy.Deny, b.decide(t, docs).Verdict.Decision, "a copy as old as the bound is read again")

	docs = restrictedOnA("bot3")
	feedB.Publish("agents", changes.Everything)
	assert.Equal(t, policy.Deny, b.decide(t, docs).Verdict.Decision, "the feed reconnected: every copy is dropped")
}

// A failed move fails neither the call nor the standing of others: the
// agent is judged as it was last read.
func TestAFailedMoveIsNotAStanding(t *testing.T) {
	agents := newMemAgents()
	clock := fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC())
	a, feed := replicaOf(t, agents, clock, time.Minute)
	bot := key()
	bot.Agent = "bot"
	agents.fail = errors.New("connection refused")
	d := a.decide(t, webAction(bot, "shop.example.com", "https://shop.example.com/admin", nil))
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.Nil(t, d.Standing)
	assert.Empty(t, feed.Notices())
}

// Alone on its database, a governor moves standings in memory: no move
// reaches the store, which is read once per agent.
func TestAloneStandingsMoveInMemory(t *testing.T) {
	w := newWorld(t, decideRules)
	bot := &auth.Identity{TenantID: tenantA, Mode: auth.Optimize, Via: auth.ViaOpen, Agent: "bot"}
	for range 5 {
		w.decide(t, webAction(bot, "shop.example.com", "https://shop.example.com/admin", nil))
	}
	assert.Zero(t, w.agents.moves)
	assert.Equal(t, 1, w.agents.reads)
}
