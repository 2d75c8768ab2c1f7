package httpapi_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/httpapi"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// fakeBudgets keeps budgets per tenant in memory, as spend.Budgets does
// through the store, and records who changed them. A budget whose window
// is "fortnight" is refused, as Validate refuses a window it does not
// know.
type fakeBudgets struct {
	mu      sync.Mutex
	lists   map[string][]spend.Budget
	actors  []string
	replace int
	put     int
}

var _ httpapi.BudgetBook = (*fakeBudgets)(nil)

func (f *fakeBudgets) List(_ context.Context, tenantID string) ([]spend.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lists[tenantID]), nil
}

func (f *fakeBudgets) Replace(_ context.Context, tenantID, actor string, list []spend.Budget) ([]spend.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range list {
		if err := fakeValidate(&list[i]); err != nil {
			return nil, err
		}
	}
	f.replace++
	f.actors = append(f.actors, actor)
	f.lists[tenantID] = slices.Clone(list)
	return list, nil
}

func (f *fakeBudgets) Put(_ context.Context, tenantID, actor string, one spend.Budget) ([]spend.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := fakeValidate(&one); err != nil {
		return nil, err
	}
	f.put++
	f.actors = append(f.actors, actor)
	list := f.lists[tenantID]
	if i := slices.IndexFunc(list, func(b spend.Budget) bool { return b.ID == one.ID }); i >= 0 {
		list[i] = one
	} else {
		list = append(list, one)
	}
	f.lists[tenantID] = list
	return slices.Clone(list), nil
}

func (f *fakeBudgets) Delete(_ context.Context, tenantID, actor, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.lists[tenantID]
	i := slices.IndexFunc(list, func(b spend.Budget) bool { return b.ID == id })
	if i < 0 {
		return errs.NotFoundf("no budget %q", id)
	}
	f.actors = append(f.actors, actor)
	f.lists[tenantID] = slices.Delete(list, i, i+1)
	return nil
}

// fakeValidate fills the defaults Validate fills and refuses one window.
func fakeValidate(b *spend.Budget) error {
	if b.Window == "fortnight" {
		return errs.Invalidf("window", "window must be one of hour, day, month")
	}
	if b.Kind == "" {
		b.Kind = spend.Hard
	}
	if b.ID == "" {
		b.ID = string(b.Scope) + "-" + b.Match + "-" + string(b.Window)
	}
	return nil
}

// fakeSpend answers a report per scope and window, counting the reads.
type fakeSpend struct {
	mu      sync.Mutex
	reports map[string]spend.Report
	reads   []string
}

var _ httpapi.SpendReports = (*fakeSpend)(nil)

func (f *fakeSpend) Report(_ context.Context, tenantID string, s spend.Scope, w spend.Window) (spend.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := tenantID + "/" + string(s) + "/" + string(w)
	f.reads = append(f.reads, k)
	rep, ok := f.reports[k]
	if !ok {
		rep = spend.Report{Scope: s, Window: w, Timezone: "UTC", Items: []spend.ReportItem{}}
	}
	return rep, nil
}

func (f *fakeSpend) readList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reads)
}

// budgetServer serves the API over the fakes, with the bootstrap token
// (admin) and a plain key's token (not admin) of the default tenant.
type budgetServer struct {
	*httptest.Server
	budgets *fakeBudgets
	spend   *fakeSpend
	plain   string
}

func newBudgetServer(t *testing.T) *budgetServer {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string {
		if k == "SVC_API_KEY" {
			return bootstrap
		}
		return ""
	})
	require.NoError(t, err)
	s := storetest.Open(t)
	keys := auth.NewKeys(s, nil)
	_, plain, err := keys.Create(context.Background(), tenant.DefaultID, auth.NewKey{Name: "plain", Mode: auth.Optimize})
	require.NoError(t, err)
	bs := &budgetServer{
		budgets: &fakeBudgets{lists: map[string][]spend.Budget{}},
		spend:   &fakeSpend{reports: map[string]spend.Report{}},
		plain:   plain,
	}
	h := httpapi.New(httpapi.Deps{
		Config: cfg, Logger: hclog.NewNullLogger(), Store: s, Auth: auth.NewAuthenticator(cfg.APIKey, keys, nil), Keys: keys,
		Settings: settings.NewService(s, &netguard.Guard{}, nil), Audit: audit.NewLog(s, hclog.NewNullLogger(), nil),
		Budgets: bs.budgets, Spend: bs.spend,
	}).Handler()
	bs.Server = httptest.NewServer(h)
	t.Cleanup(bs.Close)
	return bs
}

func (bs *budgetServer) call(t *testing.T, method, path, token, body string) response {
	t.Helper()
	return send(t, bs.Client(), method, bs.URL+path, body, "Authorization", "Bearer "+token)
}

func (bs *budgetServer) stored() []spend.Budget {
	l, _ := bs.budgets.List(context.Background(), tenant.DefaultID)
	return l
}

func ptr[T any](v T) *T { return &v }

func TestPutBudgetsReplacesTheListOrUpsertsOne(t *testing.T) {
	bs := newBudgetServer(t)

	res := bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"budgets":[
		{"id":"support-month","scope":"app","match":"support","window":"month","limitUsd":200},
		{"scope":"tenant","window":"day","kind":"soft","limitTokens":1000000,"description":"alert only"}]}`)
	require.Equal(t, 200, res.status, res.body)
	assert.Equal(t, []spend.Budget{
		{ID: "support-month", Scope: spend.App, Match: "support", Window: spend.Month, Kind: spend.Hard, LimitUSD: ptr(200.0)},
		{ID: "tenant--day", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Soft, LimitTokens: ptr(int64(1000000)), Description: "alert only"},
	}, bs.stored())
	list := res.json["budgets"].([]any)
	require.Len(t, list, 2)
	assert.Equal(t, map[string]any{"id": "support-month", "scope": "app", "match": "support", "window": "month", "kind": "hard", "limitUsd": 200.0}, list[0],
		"the answer is the budgets as stored, without the windows GET adds")
	assert.Equal(t, 1, bs.budgets.replace)

	// One budget alone: its id's budget is replaced, the others stay.
	res = bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"support-month","scope":"app","match":"support","window":"month","limitRequests":10}`)
	require.Equal(t, 200, res.status, res.body)
	assert.Equal(t, 1, bs.budgets.put)
	require.Len(t, bs.stored(), 2)
	assert.Equal(t, ptr(int64(10)), bs.stored()[0].LimitRequests)
	assert.Nil(t, bs.stored()[0].LimitUSD)
	assert.Len(t, res.json["budgets"], 2, "a single budget answers the whole list")

	// A new id joins the list.
	res = bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"bot-hour","scope":"agent","match":"bot","window":"hour","limitUsd":1.5}`)
	require.Equal(t, 200, res.status, res.body)
	assert.Len(t, bs.stored(), 3)

	// An empty list clears them.
	res = bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"budgets":[]}`)
	require.Equal(t, 200, res.status, res.body)
	assert.Empty(t, bs.stored())
	assert.Equal(t, []any{}, res.json["budgets"], "an empty list, not null")
	assert.Equal(t, []string{"bootstrap", "bootstrap", "bootstrap", "bootstrap"}, bs.budgets.actors, "each change names its actor for the audit")
}

func TestPutBudgetsRefusesABadBody(t *testing.T) {
	bs := newBudgetServer(t)
	for _, tc := range []struct {
		name, body, param string
	}{
		{"null list", `{"budgets":null}`, "budgets"},
		{"unknown key in a list's budget", `{"budgets":[{"scope":"app","window":"day","limitUsd":1,"cap":2}]}`, "budgets[0].cap"},
		{"key in another case", `{"budgets":[{"scope":"app","window":"day","limitUSD":1}]}`, "budgets[0].limitUSD"},
		{"key beside the list", `{"budgets":[],"replace":true}`, "replace"},
		{"unknown key in one budget", `{"scope":"app","window":"day","limit":1}`, "limit"},
		{"repeated key", `{"scope":"app","window":"day","window":"hour","limitUsd":1}`, "window"},
		{"wrong type", `{"scope":"app","window":"day","limitTokens":"many"}`, "limitTokens"},
		{"a list of budgets without the object", `[{"scope":"app","window":"day","limitUsd":1}]`, ""},
		{"not JSON", `{"budgets":[`, ""},
		{"refused by the budgets' own checks", `{"budgets":[{"scope":"app","window":"fortnight","limitUsd":1}]}`, "window"},
		{"one refused by the budgets' own checks", `{"scope":"app","window":"fortnight","limitUsd":1}`, "window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := bs.call(t, "PUT", "/api/v1/budgets", bootstrap, tc.body)
			assert.Equal(t, 400, res.status, res.body)
			assert.Equal(t, "invalid_request", res.errorCode())
			e, _ := res.json["error"].(map[string]any)
			if tc.param != "" {
				assert.Equal(t, tc.param, e["param"], res.body)
			}
		})
	}
	assert.Zero(t, bs.budgets.replace+bs.budgets.put, "nothing was stored")
	assert.Empty(t, bs.stored())

	res := send(t, bs.Client(), "PUT", bs.URL+"/api/v1/budgets", `{"budgets":[]}`, "Authorization", "Bearer "+bootstrap, "Content-Type", "text/plain")
	assert.Equal(t, 415, res.status, res.body)
}

func TestBudgetsNeedTheAdminRightToChange(t *testing.T) {
	bs := newBudgetServer(t)
	require.Equal(t, 200, bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"b1","scope":"tenant","window":"day","limitUsd":5}`).status)

	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/budgets", `{"budgets":[]}`},
		{"PUT", "/api/v1/budgets", `{"id":"b2","scope":"tenant","window":"hour","limitUsd":1}`},
		{"DELETE", "/api/v1/budgets/b1", ""},
	} {
		res := bs.call(t, tc.method, tc.path, bs.plain, tc.body)
		assert.Equal(t, 403, res.status, "%s %s: %s", tc.method, tc.path, res.body)
		assert.Equal(t, "admin_required", res.errorCode())
	}
	assert.Len(t, bs.stored(), 1, "nothing changed")

	// Reading is for any management credential, as the savings are.
	assert.Equal(t, 200, bs.call(t, "GET", "/api/v1/budgets", bs.plain, "").status)
	assert.Equal(t, 200, bs.call(t, "GET", "/api/v1/spend", bs.plain, "").status)
	assert.Equal(t, 401, bs.call(t, "GET", "/api/v1/budgets", "svc_wrong", "").status)
	assert.Equal(t, 401, bs.call(t, "GET", "/api/v1/spend", "svc_wrong", "").status)
}

func TestDeleteBudget(t *testing.T) {
	bs := newBudgetServer(t)
	require.Equal(t, 200, bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"budgets":[
		{"id":"b1","scope":"tenant","window":"day","limitUsd":5},
		{"id":"b2","scope":"app","window":"hour","limitRequests":100}]}`).status)

	res := bs.call(t, "DELETE", "/api/v1/budgets/b1", bootstrap, "")
	assert.Equal(t, 204, res.status, res.body)
	assert.Empty(t, res.body)
	require.Len(t, bs.stored(), 1)
	assert.Equal(t, "b2", bs.stored()[0].ID)

	res = bs.call(t, "DELETE", "/api/v1/budgets/b1", bootstrap, "")
	assert.Equal(t, 404, res.status, res.body)
	assert.Equal(t, "not_found", res.errorCode())
	assert.Len(t, bs.stored(), 1)
}

func TestListBudgetsShowsTheirWindowsAndSpend(t *testing.T) {
	bs := newBudgetServer(t)
	dayStart := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	monthStart := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := spend.Report{Scope: spend.Tenant, Window: spend.Day, Timezone: "UTC", WindowStart: dayStart, ResetsAt: dayStart.AddDate(0, 0, 1),
		Items: []spend.ReportItem{{Key: "", Amount: spend.Amount{USD: 12.5, Tokens: 4000, Requests: 9, Hits: 3}}}}
	appMonth := spend.Report{Scope: spend.App, Window: spend.Month, Timezone: "UTC", WindowStart: monthStart, ResetsAt: monthStart.AddDate(0, 1, 0),
		Items: []spend.ReportItem{
			{Key: "billing", Amount: spend.Amount{USD: 30, Tokens: 9000, Requests: 20}},
			{Key: "support", Amount: spend.Amount{USD: 7.25, Tokens: 2000, Requests: 4, Hits: 1}},
		}}
	bs.spend.reports["default/tenant/day"] = day
	bs.spend.reports["default/app/month"] = appMonth
	require.Equal(t, 200, bs.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"budgets":[
		{"id":"all-day","scope":"tenant","window":"day","limitUsd":50},
		{"id":"support","scope":"app","match":"support","window":"month","limitUsd":10},
		{"id":"each-app","scope":"app","window":"day","limitTokens":100000},
		{"id":"new-app","scope":"app","match":"not-called-yet","window":"month","limitRequests":5}]}`).status)

	res := bs.call(t, "GET", "/api/v1/budgets", bootstrap, "")
	require.Equal(t, 200, res.status, res.body)
	list := res.json["budgets"].([]any)
	require.Len(t, list, 4)
	get := func(i int) map[string]any { return list[i].(map[string]any) }

	assert.Equal(t, "all-day", get(0)["id"])
	assert.Equal(t, "2026-11-26T00:00:00Z", get(0)["windowStart"])
	assert.Equal(t, "2026-11-27T00:00:00Z", get(0)["resetsAt"])
	assert.Equal(t, map[string]any{"usd": 12.5, "tokens": 4000.0, "requests": 9.0, "hits": 3.0}, get(0)["spent"])

	assert.Equal(t, "2026-11-01T00:00:00Z", get(1)["windowStart"])
	assert.Equal(t, "2026-12-01T00:00:00Z", get(1)["resetsAt"])
	assert.Equal(t, map[string]any{"usd": 7.25, "tokens": 2000.0, "requests": 4.0, "hits": 1.0}, get(1)["spent"], "the matched app's counter, not another's")

	assert.Equal(t, "2026-11-26T00:00:00Z", get(2)["windowStart"], "a budget of each app has the window")
	assert.NotContains(t, get(2), "spent", "but names no one counter")

	assert.Equal(t, map[string]any{"usd": 0.0, "tokens": 0.0, "requests": 0.0, "hits": 0.0}, get(3)["spent"], "a counter with nothing yet is zero")

	assert.Equal(t, []string{"default/tenant/day", "default/app/month"}, bs.spend.readList(), "one report per scope and window")

	bs.budgets.lists[tenant.DefaultID] = nil
	res = bs.call(t, "GET", "/api/v1/budgets", bootstrap, "")
	require.Equal(t, 200, res.status, res.body)
	assert.Equal(t, []any{}, res.json["budgets"], "none is an empty list")
}

func TestSpendReport(t *testing.T) {
	bs := newBudgetServer(t)
	start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	bs.spend.reports["default/app/month"] = spend.Report{Scope: spend.App, Window: spend.Month, Timezone: "Europe/Paris", WindowStart: start, ResetsAt: start.AddDate(0, 1, 0),
		Items: []spend.ReportItem{{Key: "billing", Amount: spend.Amount{USD: 30, Tokens: 9000, Requests: 20, Hits: 2}}}}

	res := bs.call(t, "GET", "/api/v1/spend?scope=app&window=month", bootstrap, "")
	require.Equal(t, 200, res.status, res.body)
	assert.Equal(t, map[string]any{
		"scope": "app", "window": "month", "timezone": "Europe/Paris",
		"windowStart": "2026-11-26T00:00:00+01:00", "resetsAt": "2026-12-26T00:00:00+01:00",
		"items": []any{map[string]any{"key": "billing", "usd": 30.0, "tokens": 9000.0, "requests": 20.0, "hits": 2.0}},
	}, res.json)

	res = bs.call(t, "GET", "/api/v1/spend", bootstrap, "")
	require.Equal(t, 200, res.status, res.body)
	assert.Equal(t, "tenant", res.json["scope"])
	assert.Equal(t, "day", res.json["window"])
	assert.Equal(t, []string{"default/app/month", "default/tenant/day"}, bs.spend.readList(), "the defaults: the tenant's day")

	for _, q := range []string{"scope=team", "scope=App", "window=week", "window=day&scope=apps"} {
		res = bs.call(t, "GET", "/api/v1/spend?"+q, bootstrap, "")
		assert.Equal(t, 400, res.status, q)
		e, _ := res.json["error"].(map[string]any)
		param, _, _ := strings.Cut(strings.Split(q, "&")[len(strings.Split(q, "&"))-1], "=")
		assert.Equal(t, param, e["param"], q)
		assert.Contains(t, e["message"], "must be one of", q)
	}
	assert.Len(t, bs.spend.readList(), 2, "a refused query reads nothing")
}
