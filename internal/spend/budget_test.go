package spend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/spend/spendtest"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func TestValidateFillsDefaults(t *testing.T) {
	cases := []struct {
		in     spend.Budget
		wantID string
	}{
		{spend.Budget{Scope: spend.App, Match: "support", Window: spend.Day, LimitUSD: f64(50)}, "app-support-day"},
		{spend.Budget{Scope: spend.Tenant, Window: spend.Month, LimitTokens: i64(1000)}, "tenant-month"},
		{spend.Budget{Scope: spend.App, Window: spend.Hour, LimitRequests: i64(5)}, "app-hour"},
		{spend.Budget{Scope: spend.Subject, Match: "Ana María <ana@example.com>", Window: spend.Day, LimitRequests: i64(5)}, "subject-ana-mar-a-ana-example.com-day"},
		{spend.Budget{Scope: spend.Key, Match: strings.Repeat("k", 200), Window: spend.Month, LimitRequests: i64(5)}, "key-" + strings.Repeat("k", 53) + "-month"},
		{spend.Budget{ID: "Support.Daily_Cap", Scope: spend.App, Match: "support", Window: spend.Day, LimitUSD: f64(1)}, "support.daily_cap"},
	}
	for _, c := range cases {
		b := c.in
		require.NoError(t, b.Validate(), "%+v", c.in)
		assert.Equal(t, c.wantID, b.ID)
		assert.LessOrEqual(t, len(b.ID), 64)
		assert.Equal(t, spend.Hard, b.Kind, "hard by default")
	}
	soft := spend.Budget{Scope: spend.Tenant, Window: spend.Day, Kind: spend.Soft, LimitUSD: f64(1)}
	require.NoError(t, soft.Validate())
	assert.Equal(t, spend.Soft, soft.Kind)
}

func TestValidateNamesTheField(t *testing.T) {
	ok := func() spend.Budget {
		return spend.Budget{Scope: spend.App, Match: "a", Window: spend.Day, LimitUSD: f64(1)}
	}
	with := func(f func(*spend.Budget)) spend.Budget { b := ok(); f(&b); return b }
	cases := []struct {
		b     spend.Budget
		field string
	}{
		{with(func(b *spend.Budget) { b.Scope = "team" }), "scope"},
		{with(func(b *spend.Budget) { b.Scope = "" }), "scope"},
		{with(func(b *spend.Budget) { b.Window = "week" }), "window"},
		{with(func(b *spend.Budget) { b.Kind = "firm" }), "kind"},
		{with(func(b *spend.Budget) { b.Scope = spend.Tenant }), "match"},
		{with(func(b *spend.Budget) { b.Match = "a\nb" }), "match"},
		{with(func(b *spend.Budget) { b.Match = strings.Repeat("m", 257) }), "match"},
		{with(func(b *spend.Budget) { b.LimitUSD = nil }), "limitUsd"},
		{with(func(b *spend.Budget) { b.LimitUSD = f64(0) }), "limitUsd"},
		{with(func(b *spend.Budget) { b.LimitUSD = f64(-1) }), "limitUsd"},
		{with(func(b *spend.Budget) { b.LimitUSD = f64(posInf()) }), "limitUsd"},
		{with(func(b *spend.Budget) { b.LimitUSD = f64(nan()) }), "limitUsd"},
		{with(func(b *spend.Budget) { b.LimitTokens = i64(0) }), "limitTokens"},
		{with(func(b *spend.Budget) { b.LimitRequests = i64(-5) }), "limitRequests"},
		{with(func(b *spend.Budget) { b.ID = "-starts-with-dash" }), "id"},
		{with(func(b *spend.Budget) { b.ID = "has space" }), "id"},
		{with(func(b *spend.Budget) { b.ID = "budget:x" }), "id"},
		{with(func(b *spend.Budget) { b.ID = strings.Repeat("a", 65) }), "id"},
		{with(func(b *spend.Budget) { b.Description = strings.Repeat("é", 501) }), "description"},
	}
	for _, c := range cases {
		b := c.b
		e := errs.As(b.Validate())
		require.NotNil(t, e, "%s: want an error for %+v", c.field, c.b)
		assert.Equal(t, errs.Invalid, e.Kind)
		assert.Equal(t, c.field, e.Param)
		assert.Contains(t, e.Public, c.field)

		b = c.b
		e = errs.As(b.ValidateAt(2))
		require.NotNil(t, e)
		assert.Equal(t, "budgets[2]."+c.field, e.Param, "a list's entry is named by its index")
		assert.True(t, strings.HasPrefix(e.Public, "budgets[2]."+c.field), e.Public)
	}
	b := with(func(b *spend.Budget) { b.Description = strings.Repeat("é", 500) })
	assert.NoError(t, b.Validate(), "500 characters are allowed, whatever their bytes")
}

func posInf() float64 { z := 0.0; return 1 / z }
func nan() float64    { z := 0.0; return z / z }

func mustCompile(t *testing.T, list ...spend.Budget) *spend.Compiled {
	t.Helper()
	for i := range list {
		require.NoError(t, list[i].Validate())
	}
	c, err := spend.Compile(list)
	require.NoError(t, err)
	return c
}

func TestHardBudgetsCompileToDenyRules(t *testing.T) {
	quoted := `it's "quoted" \ back\slashed \" end`
	c := mustCompile(t,
		spend.Budget{Scope: spend.App, Match: quoted, Window: spend.Day, LimitRequests: i64(2)},
		spend.Budget{ID: "each-key", Scope: spend.Key, Window: spend.Month, LimitTokens: i64(100)},
		spend.Budget{ID: "tenant-usd", Scope: spend.Tenant, Window: spend.Hour, LimitUSD: f64(5)},
		spend.Budget{ID: "agents", Scope: spend.Agent, Match: "bot", Window: spend.Hour, LimitUSD: f64(0.25)},
		spend.Budget{ID: "watch", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Soft, LimitUSD: f64(1)},
	)
	require.NotNil(t, c.Set)
	assert.Len(t, c.Hard, 4)
	assert.Len(t, c.Soft, 1)
	assert.True(t, c.Set.ReadsSpend())
	for _, r := range c.Set.Rules() {
		assert.True(t, strings.HasPrefix(r.ID, spend.RulePrefix), r.ID)
		assert.Equal(t, policy.Deny, r.Effect)
		assert.NotEqual(t, "budget:watch", r.ID, "a soft budget denies nothing")
	}

	cases := []struct {
		name string
		in   policy.Input
		want []string
	}{
		{"nothing spent", policy.Input{Request: policy.Request{App: quoted}}, nil},
		{"the matched app at its limit", policy.Input{Request: policy.Request{App: quoted},
			Spend: policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{Requests: 2}}}}, []string{"budget:app-it-s-quoted-back-slashed-end-day"}},
		{"a near miss of the match", policy.Input{Request: policy.Request{App: `it's "quoted" \ back\slashed " end`},
			Spend: policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{Requests: 2}}}}, nil},
		{"any key at its limit", policy.Input{Request: policy.Request{Key: "key_1"},
			Spend: policy.Spend{Key: policy.SpendScope{Month: policy.SpendWindow{Tokens: 100}}}}, []string{"budget:each-key"}},
		{"no key: no key budget", policy.Input{Spend: policy.Spend{Key: policy.SpendScope{Month: policy.SpendWindow{Tokens: 100}}}}, nil},
		{"the tenant just under", policy.Input{Spend: policy.Spend{Tenant: policy.SpendScope{Hour: policy.SpendWindow{USD: 4.999}}}}, nil},
		{"the tenant at its dollars", policy.Input{Spend: policy.Spend{Tenant: policy.SpendScope{Hour: policy.SpendWindow{USD: 5}}}}, []string{"budget:tenant-usd"}},
		{"the agent past a fraction", policy.Input{Request: policy.Request{Agent: "bot"},
			Spend: policy.Spend{Agent: policy.SpendScope{Hour: policy.SpendWindow{USD: 0.3}}}}, []string{"budget:agents"}},
	}
	for _, k := range cases {
		v := c.Set.Evaluate(context.Background(), policy.Chat, &k.in)
		var got []string
		for _, r := range v.Rules {
			got = append(got, r.ID)
		}
		assert.Equal(t, k.want, got, k.name)
	}
}

func TestNoBudgetsCompileToNothing(t *testing.T) {
	c, err := spend.Compile(nil)
	require.NoError(t, err)
	assert.Nil(t, c)
	soft := mustCompile(t, spend.Budget{Scope: spend.Tenant, Window: spend.Day, Kind: spend.Soft, LimitUSD: f64(1)})
	assert.Nil(t, soft.Set, "soft budgets alone make no rules")
}

func TestExceeded(t *testing.T) {
	c := mustCompile(t,
		spend.Budget{Scope: spend.App, Match: "support", Window: spend.Day, LimitRequests: i64(10)},
		spend.Budget{Scope: spend.Tenant, Window: spend.Hour, LimitUSD: f64(2.5)},
		spend.Budget{Scope: spend.Tenant, Window: spend.Month, LimitTokens: i64(1000)},
	)
	now := time.Date(2026, 11, 26, 12, 40, 0, 0, time.UTC)
	sp := policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{Requests: 10}}, Tenant: policy.SpendScope{Hour: policy.SpendWindow{USD: 2.75}}}
	in := policy.Input{Request: policy.Request{App: "support"}, Spend: sp}
	v := c.Set.Evaluate(context.Background(), policy.Chat, &in)
	require.Equal(t, policy.Deny, v.Decision)

	e := c.Exceeded(v, now, time.UTC)
	require.NotNil(t, e)
	assert.Equal(t, errs.RateLimited, e.Kind)
	assert.Equal(t, spend.CodeExceeded, e.Code)
	assert.Equal(t, 11*time.Hour+20*time.Minute, e.Retry, "the latest reset, the day's: before it the day's budget still refuses")
	assert.Contains(t, e.Public, `budget "app-support-day" (app "support", day window) reached its limit of 10 requests; resets at 2026-11-27T00:00:00Z`)
	assert.Contains(t, e.Public, `budget "tenant-hour" (tenant, hour window) reached its limit of $2.5; resets at 2026-11-26T13:00:00Z`)
	assert.NotContains(t, e.Public, "tenant-month", "a budget that did not deny is not named")
	budgets := e.Beside["budgets"].([]map[string]any)
	require.Len(t, budgets, 2)
	assert.Equal(t, "support", budgets[0]["match"])

	e = c.ExceededBy(v, &sp, now, time.UTC)
	assert.Contains(t, e.Public, "reached its limit of 10 requests (made 10)")
	assert.Contains(t, e.Public, "reached its limit of $2.5 (spent $2.75)")

	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	only := mustCompile(t, spend.Budget{Scope: spend.App, Match: "support", Window: spend.Day, LimitRequests: i64(10)})
	v = only.Set.Evaluate(context.Background(), policy.Chat, &in)
	e = only.Exceeded(v, now, kolkata)
	assert.Equal(t, 5*time.Hour+50*time.Minute, e.Retry, "Kolkata's midnight is 18:30 UTC")
	assert.Contains(t, e.Public, "resets at 2026-11-26T18:30:00Z")

	e = only.Exceeded(v, time.Date(2026, 11, 26, 18, 29, 59, 400_000_000, time.UTC), kolkata)
	assert.Equal(t, time.Second, e.Retry, "never less than a second, never before the reset")

	assert.Nil(t, c.Exceeded(policy.Verdict{Decision: policy.Allow}, now, time.UTC))
	assert.Nil(t, c.Exceeded(policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{{ID: "file-rule", Effect: policy.Deny}}}, now, time.UTC),
		"a deny of no budget is no budget error")
	var none *spend.Compiled
	assert.Nil(t, none.Exceeded(v, now, time.UTC))
}

func newBudgets(t *testing.T) (*spend.Budgets, *spendtest.Store, *audittest.Memory) {
	t.Helper()
	st := spendtest.NewStore()
	mem := &audittest.Memory{}
	return spend.NewBudgets(spend.BudgetsOptions{Store: st, Audit: audit.NewLog(mem, nil, nil)}), st, mem
}

func TestBudgetsService(t *testing.T) {
	ctx := context.Background()
	b, st, mem := newBudgets(t)

	c, err := b.Compiled(ctx, "t1")
	require.NoError(t, err)
	assert.Nil(t, c, "no budgets, nothing compiled")

	list, err := b.Replace(ctx, "t1", "user:u1", []spend.Budget{
		{Scope: spend.App, Match: "support", Window: spend.Day, LimitUSD: f64(50)},
		{Scope: spend.Tenant, Window: spend.Month, Kind: spend.Soft, LimitUSD: f64(1000)},
	})
	require.NoError(t, err)
	assert.Equal(t, "app-support-day", list[0].ID)
	assert.Equal(t, spend.Hard, list[0].Kind)

	c1, err := b.Compiled(ctx, "t1")
	require.NoError(t, err)
	require.NotNil(t, c1)
	assert.Len(t, c1.Hard, 1)
	c2, _ := b.Compiled(ctx, "t1")
	assert.Same(t, c1, c2, "compiled once, then cached")
	other, _ := b.Compiled(ctx, "t2")
	assert.Nil(t, other, "another tenant's budgets are not this one's")

	list, err = b.Put(ctx, "t1", "user:u1", spend.Budget{ID: "APP-SUPPORT-DAY", Scope: spend.App, Match: "support", Window: spend.Day, LimitUSD: f64(60)})
	require.NoError(t, err)
	require.Len(t, list, 2, "an id of another case replaces the budget")
	assert.InDelta(t, 60, *list[0].LimitUSD, 0)
	c3, _ := b.Compiled(ctx, "t1")
	assert.NotSame(t, c1, c3, "a change drops the compiled set")

	list, err = b.Put(ctx, "t1", "user:u1", spend.Budget{Scope: spend.Key, Match: "key_1", Window: spend.Hour, LimitRequests: i64(100)})
	require.NoError(t, err)
	assert.Len(t, list, 3)

	_, err = b.Replace(ctx, "t1", "user:u1", []spend.Budget{
		{ID: "a", Scope: spend.Tenant, Window: spend.Day, LimitUSD: f64(1)},
		{ID: "A", Scope: spend.Tenant, Window: spend.Hour, LimitUSD: f64(1)},
	})
	e := errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, "budgets[1].id", e.Param)
	_, err = b.Replace(ctx, "t1", "user:u1", []spend.Budget{{ID: "a", Scope: spend.Tenant, Window: spend.Day, LimitUSD: f64(1)}, {Scope: spend.Tenant, Window: "year", LimitUSD: f64(1)}})
	assert.Equal(t, "budgets[1].window", errs.As(err).Param)
	got, _ := b.List(ctx, "t1")
	assert.Len(t, got, 3, "a refused list changes nothing")

	require.NoError(t, b.Delete(ctx, "t1", "user:u1", "Key-Key_1-Hour"))
	assert.True(t, errs.Is(b.Delete(ctx, "t1", "user:u1", "key-key_1-hour"), errs.NotFound))
	assert.True(t, errs.Is(b.Delete(ctx, "t2", "user:u1", "app-support-day"), errs.NotFound), "another tenant's budget is not found")

	list, err = b.Replace(ctx, "t1", "user:u1", []spend.Budget{})
	require.NoError(t, err)
	assert.Empty(t, list)
	c, _ = b.Compiled(ctx, "t1")
	assert.Nil(t, c, "an empty list clears the budgets")
	stored, _ := st.Budgets(ctx, "t1")
	assert.Empty(t, stored)

	var updates int
	for _, ev := range mem.Events() {
		if ev.Action == "budgets.updated" {
			updates++
			assert.Equal(t, "user:u1", ev.Actor)
			assert.Equal(t, "t1", ev.TenantID)
		}
	}
	assert.Equal(t, 5, updates, "each change is audited, no refused one")
}

func TestBudgetsFollowOtherReplicas(t *testing.T) {
	ctx := context.Background()
	b, st, _ := newBudgets(t)
	feed := changestest.New()
	b.Replicate(feed, time.Hour)

	_, err := b.Put(ctx, "t1", "user:u1", spend.Budget{Scope: spend.Tenant, Window: spend.Day, LimitUSD: f64(1)})
	require.NoError(t, err)
	require.Len(t, feed.Notices(), 1)
	assert.Equal(t, changestest.Notice{Topic: "budgets", Payload: "t1", Deadline: true}, feed.Notices()[0])

	c, _ := b.Compiled(ctx, "t1")
	require.Len(t, c.Hard, 1)
	// Another replica changes the budgets: the cache holds until its notice.
	require.NoError(t, st.ReplaceBudgets(ctx, "t1", nil))
	c, _ = b.Compiled(ctx, "t1")
	assert.NotNil(t, c)
	feed.Publish("budgets", "t1")
	c, _ = b.Compiled(ctx, "t1")
	assert.Nil(t, c, "the notice dropped the tenant's budgets")

	require.NoError(t, st.ReplaceBudgets(ctx, "t1", []spend.Budget{{ID: "x", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Hard, LimitUSD: f64(1)}}))
	feed.Publish("budgets", changes.Everything)
	c, _ = b.Compiled(ctx, "t1")
	assert.NotNil(t, c, "a reconnection drops every tenant's")

	require.NoError(t, st.ReplaceBudgets(ctx, "t1", nil))
	b.ForgetTenant("t1")
	c, _ = b.Compiled(ctx, "t1")
	assert.Nil(t, c, "a forgotten tenant is read again")
}

func TestBudgetsAreReadAgainPastTheRefreshBound(t *testing.T) {
	ctx := context.Background()
	st := spendtest.NewStore()
	clock := fakeclock.New(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	b := spend.NewBudgets(spend.BudgetsOptions{Store: st, Now: clock.Now})
	b.Replicate(changestest.New(), time.Minute)
	c, _ := b.Compiled(ctx, "t1")
	assert.Nil(t, c)
	// Another replica's change whose notice was lost.
	require.NoError(t, st.ReplaceBudgets(ctx, "t1", []spend.Budget{{ID: "x", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Hard, LimitUSD: f64(1)}}))
	clock.Advance(59 * time.Second)
	c, _ = b.Compiled(ctx, "t1")
	assert.Nil(t, c, "trusted within the bound")
	clock.Advance(time.Second)
	c, _ = b.Compiled(ctx, "t1")
	assert.NotNil(t, c, "read again past it")
}

// A read again past the refresh bound that fails keeps the last read: a
// database that cannot answer for a moment does not refuse every call.
func TestAFailedRefreshKeepsTheLastBudgets(t *testing.T) {
	ctx := context.Background()
	st := spendtest.NewStore()
	clock := fakeclock.New(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	b := spend.NewBudgets(spend.BudgetsOptions{Store: st, Now: clock.Now})
	feed := changestest.New()
	b.Replicate(feed, time.Minute)
	require.NoError(t, st.ReplaceBudgets(ctx, "t1", []spend.Budget{{ID: "x", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Hard, LimitUSD: f64(1)}}))
	c, err := b.Compiled(ctx, "t1")
	require.NoError(t, err)
	require.NotNil(t, c)
	st.Fail(errors.New("the database is gone"))
	clock.Advance(2 * time.Minute)
	c, err = b.Compiled(ctx, "t1")
	require.NoError(t, err)
	assert.NotNil(t, c, "the last read stands")
	b.ForgetTenant("t1")
	_, err = b.Compiled(ctx, "t1")
	assert.Error(t, err, "with nothing read before, a failed read fails")
}
