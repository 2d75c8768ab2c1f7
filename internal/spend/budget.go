package spend

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/policy"
)

// Kind says what a budget does at its limit.
type Kind string

// The kinds of budget.
const (
	// Hard refuses the scope's calls once its counter reaches the limit:
	// 429 budget_exceeded, in every mode.
	Hard Kind = "hard"
	// Soft refuses nothing: a webhook event and an audit entry tell of its
	// counter reaching 80% and 100% of the limit, once per window.
	Soft Kind = "soft"
)

// Budget is a limit on one scope's spend over one window. A budget of a
// scope other than the tenant limits one value of it (Match: an app's
// name, a key's id, an agent's name, a subject), or, without Match, each
// value separately (every app its own limit). At least one limit is set;
// the budget is reached when any is.
type Budget struct {
	ID            string   `json:"id"`
	Scope         Scope    `json:"scope"`
	Match         string   `json:"match,omitempty"`
	Window        Window   `json:"window"`
	Kind          Kind     `json:"kind"`
	LimitUSD      *float64 `json:"limitUsd,omitempty"`
	LimitTokens   *int64   `json:"limitTokens,omitempty"`
	LimitRequests *int64   `json:"limitRequests,omitempty"`
	Description   string   `json:"description,omitempty"`
}

// RulePrefix starts the id of the rule a budget is compiled into:
// "budget:" and the budget's id.
const RulePrefix = "budget:"

// CodeExceeded is the error code of a call a hard budget refuses (429).
const CodeExceeded = "budget_exceeded"

// EventThreshold is the webhook event (and audit action) of a soft budget
// reaching 80% or 100% of its limit.
const EventThreshold = "budget.threshold"

// Compiled is a tenant's budgets ready for the request path: the hard
// ones as chat rules, evaluated beside the policy files' (Set is nil
// without any), the soft ones for the alerts.
type Compiled struct {
	Set  *policy.Set
	Hard []Budget
	Soft []Budget
}

// Exceeded is the error a call denied by the budget rules of v answers
// with: 429 budget_exceeded, naming each budget and when its window resets
// (the Retry-After: the latest of them, when the call can pass them all),
// in loc. Nil when no budget rule denied.
func (c *Compiled) Exceeded(v policy.Verdict, now time.Time, loc *time.Location) *errs.Error {
	return c.ExceededBy(v, nil, now, loc)
}

// ExceededBy is Exceeded that also says which limit of each budget was
// reached and what was spent, from the counters the rules were evaluated
// with (nil: every limit of the budget is named).
func (c *Compiled) ExceededBy(v policy.Verdict, s *policy.Spend, now time.Time, loc *time.Location) *errs.Error {
	if c == nil || v.Decision != policy.Deny {
		return nil
	}
	if loc == nil {
		loc = time.UTC
	}
	var (
		parts   []string
		details []map[string]any
		latest  time.Time
	)
	for _, r := range v.Rules {
		if r.Effect != policy.Deny || r.Error != "" || !strings.HasPrefix(r.ID, RulePrefix) {
			continue
		}
		b, ok := c.hard(strings.TrimPrefix(r.ID, RulePrefix))
		if !ok {
			continue
		}
		start := b.Window.Start(now, loc)
		resets := b.Window.End(start, loc)
		if resets.After(latest) {
			latest = resets
		}
		var spent *Amount
		if s != nil {
			a := amountIn(s, b.Scope, b.Window)
			spent = &a
		}
		parts = append(parts, fmt.Sprintf("budget %q (%s, %s window) reached %s; resets at %s",
			b.ID, b.scopeText(), b.Window, b.limitText(spent), resets.UTC().Format(time.RFC3339)))
		d := map[string]any{"id": b.ID, "scope": b.Scope, "window": b.Window, "limit": b.limits(),
			"windowStart": start.UTC().Format(time.RFC3339), "resetsAt": resets.UTC().Format(time.RFC3339)}
		if b.Match != "" {
			d["match"] = b.Match
		}
		if spent != nil {
			d["spent"] = *spent
		}
		details = append(details, d)
	}
	if len(parts) == 0 {
		return nil
	}
	e := errs.E(errs.RateLimited, CodeExceeded, "%s", strings.Join(parts, "; "))
	// Whole seconds (Retry-After's unit), rounded up: never a retry
	// before the reset.
	e.Retry = (latest.Sub(now) + time.Second - 1).Truncate(time.Second)
	e.Beside = map[string]any{"budgets": details}
	return e
}

// hard returns the hard budget id.
func (c *Compiled) hard(id string) (Budget, bool) {
	for _, b := range c.Hard {
		if b.ID == id {
			return b, true
		}
	}
	return Budget{}, false
}

// amountIn is the counter of scope s and window w in sp.
func amountIn(sp *policy.Spend, s Scope, w Window) Amount {
	sw := spendWindow(spendScope(sp, s), w)
	return Amount{USD: sw.USD, Tokens: sw.Tokens, Requests: sw.Requests, Hits: sw.Hits}
}

// spendScope is the part of sp that counts scope s.
func spendScope(sp *policy.Spend, s Scope) *policy.SpendScope {
	switch s {
	case App:
		return &sp.App
	case Key:
		return &sp.Key
	case Agent:
		return &sp.Agent
	case Subject:
		return &sp.Subject
	}
	return &sp.Tenant
}

// spendWindow is the part of ss that counts window w.
func spendWindow(ss *policy.SpendScope, w Window) *policy.SpendWindow {
	switch w {
	case Hour:
		return &ss.Hour
	case Day:
		return &ss.Day
	}
	return &ss.Month
}

// scopeText names the budget's scope for a person: `app "support"`, or
// "each app".
func (b *Budget) scopeText() string {
	switch {
	case b.Scope == Tenant:
		return "tenant"
	case b.Match != "":
		return fmt.Sprintf("%s %q", b.Scope, b.Match)
	}
	return "each " + string(b.Scope)
}

// limitText names the limits reached: with spent, those it reaches and
// what was spent; without, every limit.
func (b *Budget) limitText(spent *Amount) string {
	var out []string
	if b.LimitUSD != nil && (spent == nil || spent.USD >= *b.LimitUSD) {
		t := "its limit of $" + formatFloat(*b.LimitUSD)
		if spent != nil {
			t += fmt.Sprintf(" (spent $%s)", formatFloat(math.Round(spent.USD*1e6)/1e6))
		}
		out = append(out, t)
	}
	if b.LimitTokens != nil && (spent == nil || spent.Tokens >= *b.LimitTokens) {
		t := fmt.Sprintf("its limit of %d tokens", *b.LimitTokens)
		if spent != nil {
			t += fmt.Sprintf(" (spent %d)", spent.Tokens)
		}
		out = append(out, t)
	}
	if b.LimitRequests != nil && (spent == nil || spent.Requests >= *b.LimitRequests) {
		t := fmt.Sprintf("its limit of %d requests", *b.LimitRequests)
		if spent != nil {
			t += fmt.Sprintf(" (made %d)", spent.Requests)
		}
		out = append(out, t)
	}
	if len(out) == 0 { // the counters moved since the verdict
		return "a limit"
	}
	sep := " or "
	if spent != nil {
		sep = " and "
	}
	return strings.Join(out, sep)
}

// limits is the budget's limits, by the counter they limit.
func (b *Budget) limits() map[string]any {
	m := map[string]any{}
	if b.LimitUSD != nil {
		m["usd"] = *b.LimitUSD
	}
	if b.LimitTokens != nil {
		m["tokens"] = *b.LimitTokens
	}
	if b.LimitRequests != nil {
		m["requests"] = *b.LimitRequests
	}
	return m
}

// formatFloat writes f in its shortest form.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Bounds of a budget.
const (
	maxIDLen          = 64
	maxMatchLen       = 256
	maxDescription    = 500
	maxBudgets        = 200 // per tenant
	maxLimitUSD       = 1e12
	maxLimitCountable = 1 << 53
)

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Validate checks a budget, filling the defaults (kind hard; an id made
// of the scope, match and window when none is given), and names the
// offending field in an errs.Invalid error.
func (b *Budget) Validate() error { return b.validate("") }

// ValidateAt is Validate for the budget at index i of a list: the error
// names the field as budgets[i].field.
func (b *Budget) ValidateAt(i int) error { return b.validate(fmt.Sprintf("budgets[%d].", i)) }

// validate is Validate with each field's name after prefix.
func (b *Budget) validate(prefix string) error {
	bad := func(field, format string, args ...any) error {
		e := errs.Invalidf(prefix+field, prefix+field+" "+format, args...)
		e.Code = "invalid_budget"
		return e
	}
	if !knownScope(b.Scope) {
		return bad("scope", "must be one of tenant, app, key, agent, subject")
	}
	if !knownWindow(b.Window) {
		return bad("window", "must be one of hour, day, month")
	}
	switch b.Kind {
	case "":
		b.Kind = Hard
	case Hard, Soft:
	default:
		return bad("kind", "must be hard or soft")
	}
	if b.Scope == Tenant && b.Match != "" {
		return bad("match", "is not allowed for the tenant scope: the tenant has one counter")
	}
	if len(b.Match) > maxMatchLen || !printable(b.Match) {
		return bad("match", "must be printable text of at most %d bytes", maxMatchLen)
	}
	if b.LimitUSD == nil && b.LimitTokens == nil && b.LimitRequests == nil {
		return bad("limitUsd", "or limitTokens or limitRequests must be set")
	}
	if l := b.LimitUSD; l != nil && (math.IsNaN(*l) || *l <= 0 || *l > maxLimitUSD) {
		return bad("limitUsd", "must be a positive number of dollars, at most %g", float64(maxLimitUSD))
	}
	if l := b.LimitTokens; l != nil && (*l < 1 || *l > maxLimitCountable) {
		return bad("limitTokens", "must be a whole number from 1 to %d", int64(maxLimitCountable))
	}
	if l := b.LimitRequests; l != nil && (*l < 1 || *l > maxLimitCountable) {
		return bad("limitRequests", "must be a whole number from 1 to %d", int64(maxLimitCountable))
	}
	if b.ID == "" {
		b.ID = b.defaultID()
	}
	b.ID = strings.ToLower(b.ID)
	if !idPattern.MatchString(b.ID) {
		return bad("id", "must be 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit", maxIDLen)
	}
	if utf8.RuneCountInString(b.Description) > maxDescription || !utf8.ValidString(b.Description) {
		return bad("description", "must be text of at most %d characters", maxDescription)
	}
	return nil
}

// defaultID is the id of a budget that names none: its scope, its match
// (what of it an id can hold) and its window, as "app-support-day" or
// "tenant-month".
func (b *Budget) defaultID() string {
	var m strings.Builder
	dash := false
	for _, r := range strings.ToLower(b.Match) {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_') {
			m.WriteRune(r)
			dash = false
		} else if !dash && m.Len() > 0 {
			m.WriteByte('-')
			dash = true
		}
	}
	match := strings.TrimRight(m.String(), "-")
	room := maxIDLen - len(b.Scope) - len(b.Window) - 2
	if len(match) > room-1 {
		match = strings.TrimRight(match[:room-1], "-")
	}
	if match == "" {
		return string(b.Scope) + "-" + string(b.Window)
	}
	return string(b.Scope) + "-" + match + "-" + string(b.Window)
}

func knownScope(s Scope) bool {
	for _, x := range Scopes {
		if s == x {
			return true
		}
	}
	return false
}

func knownWindow(w Window) bool {
	for _, x := range Windows {
		if w == x {
			return true
		}
	}
	return false
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// celField is the field of policy.Request that holds scope s's value.
var celField = map[Scope]string{App: "request.app", Key: "request.key", Agent: "request.agent", Subject: "request.subject"}

// rule is the chat rule a hard budget is compiled into: deny while the
// counter of its scope and window is at any of its limits (the calls in
// flight counted), for the scope's value it names or, without one, any.
func (b *Budget) rule() policy.Rule {
	counter := "spend." + string(b.Scope) + "." + string(b.Window)
	var limits []string
	if b.LimitUSD != nil {
		limits = append(limits, counter+".usd >= "+celDouble(*b.LimitUSD))
	}
	if b.LimitTokens != nil {
		limits = append(limits, counter+".tokens >= "+strconv.FormatInt(*b.LimitTokens, 10))
	}
	if b.LimitRequests != nil {
		limits = append(limits, counter+".requests >= "+strconv.FormatInt(*b.LimitRequests, 10))
	}
	when := "(" + strings.Join(limits, " || ") + ")"
	switch {
	case b.Scope == Tenant:
	case b.Match != "":
		when = celField[b.Scope] + " == " + strconv.Quote(b.Match) + " && " + when
	default:
		when = celField[b.Scope] + ` != "" && ` + when
	}
	return policy.Rule{ID: RulePrefix + b.ID, Description: b.Description, Target: policy.Chat, Effect: policy.Deny,
		When: when, Source: "budgets",
		Reason: fmt.Sprintf("budget %q (%s, %s window) reached %s", b.ID, b.scopeText(), b.Window, b.limitText(nil))}
}

// celDouble writes f as a CEL double literal.
func celDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// Compile compiles a tenant's budgets (validated) for the request path;
// nil without any.
func Compile(list []Budget) (*Compiled, error) {
	if len(list) == 0 {
		return nil, nil
	}
	c := &Compiled{}
	var rules []policy.Rule
	for _, b := range list {
		if b.Kind == Soft {
			c.Soft = append(c.Soft, b)
			continue
		}
		c.Hard = append(c.Hard, b)
		rules = append(rules, b.rule())
	}
	if len(rules) > 0 {
		set, err := policy.NewSet(rules)
		if err != nil {
			return nil, fmt.Errorf("compiling budgets: %w", err)
		}
		c.Set = set
	}
	return c, nil
}

// Budgets is every tenant's budgets: read and written through the store,
// compiled once per change and cached per tenant (dropped on a change
// here or, through Replicate, on another replica).
type Budgets struct {
	o      BudgetsOptions
	cached sync.Map // tenant id → cachedBudgets

	mu    sync.Mutex
	gen   map[string]uint64 // bumped by each change, so that a read older than it is never cached
	epoch uint64            // bumped when every tenant is dropped, for the same reason
	// writing serializes the read-modify-write of Put and Delete.
	writing sync.Mutex

	feed    changes.Feed
	refresh time.Duration
}

// BudgetsOptions are what Budgets is built from.
type BudgetsOptions struct {
	Store  Store
	Audit  *audit.Log // nil: nothing is audited
	Now    func() time.Time
	Logger hclog.Logger
}

// cachedBudgets is a tenant's budgets compiled (nil: none), and when they
// were read (only kept with a refresh bound).
type cachedBudgets struct {
	list   []Budget
	c      *Compiled
	loaded time.Time
}

// budgetsTopic carries the id of a tenant whose budgets changed.
const budgetsTopic = "budgets"

// NewBudgets returns the budgets service.
func NewBudgets(o BudgetsOptions) *Budgets {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Budgets{o: o, gen: map[string]uint64{}}
}

// Replicate makes the cache follow the other replicas of the database: a
// change here is announced on feed, a tenant whose budgets changed
// elsewhere is dropped when its notice arrives, and an entry older than
// refresh is read again, the bound on a lost notice. Call it before use.
func (b *Budgets) Replicate(feed changes.Feed, refresh time.Duration) {
	b.feed, b.refresh = feed, refresh
	feed.Subscribe(budgetsTopic, b.drop)
}

// ForgetTenant drops what is kept of a tenant (a deleted organization).
func (b *Budgets) ForgetTenant(tenantID string) { b.drop(tenantID) }

// drop forgets a tenant's cached budgets, or every tenant's for
// changes.Everything; a read in flight does not put them back.
func (b *Budgets) drop(tenantID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tenantID == changes.Everything {
		b.epoch++
		b.cached.Clear()
		return
	}
	b.gen[tenantID]++
	b.cached.Delete(tenantID)
}

// load returns the tenant's budgets and their compiled form, from the
// cache or the store.
func (b *Budgets) load(ctx context.Context, tenantID string) (cachedBudgets, error) {
	var (
		now   time.Time
		stale *cachedBudgets // past the refresh bound, but no change was heard of
	)
	if c, ok := b.cached.Load(tenantID); ok {
		c := c.(cachedBudgets)
		if b.refresh <= 0 {
			return c, nil
		}
		if now = b.o.Now(); now.Sub(c.loaded) < b.refresh {
			return c, nil
		}
		stale = &c
	} else if b.refresh > 0 {
		now = b.o.Now()
	}
	b.mu.Lock()
	gen, epoch := b.gen[tenantID], b.epoch
	b.mu.Unlock()
	list, err := b.o.Store.Budgets(ctx, tenantID)
	if err != nil && stale != nil {
		// The refresh is a safety net for a lost notice, not a change: a
		// database that cannot answer it now leaves the budgets as they
		// were, rather than refusing every call until it answers.
		b.o.Logger.Warn("the budgets could not be read again; the last read stands", "tenant", tenantID, "error", err)
		return *stale, nil
	}
	if err != nil {
		return cachedBudgets{}, err
	}
	compiled, err := Compile(list)
	if err != nil {
		return cachedBudgets{}, err
	}
	out := cachedBudgets{list: list, c: compiled, loaded: now}
	b.mu.Lock()
	if b.gen[tenantID] == gen && b.epoch == epoch {
		b.cached.Store(tenantID, out)
	}
	b.mu.Unlock()
	return out, nil
}

// peek returns the tenant's compiled budgets when they are cached, without
// reading the store.
func (b *Budgets) peek(tenantID string) (*Compiled, bool) {
	c, ok := b.cached.Load(tenantID)
	if !ok {
		return nil, false
	}
	return c.(cachedBudgets).c, true
}

// List returns the tenant's budgets.
func (b *Budgets) List(ctx context.Context, tenantID string) ([]Budget, error) {
	c, err := b.load(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return append([]Budget{}, c.list...), nil
}

// Replace validates list (every budget, ids distinct) and makes it the
// tenant's budgets, audited as budgets.updated by actor; it returns the
// budgets as stored (defaults filled).
func (b *Budgets) Replace(ctx context.Context, tenantID, actor string, list []Budget) ([]Budget, error) {
	list = append([]Budget{}, list...)
	for i := range list {
		if err := list[i].ValidateAt(i); err != nil {
			return nil, err
		}
	}
	b.writing.Lock()
	defer b.writing.Unlock()
	if err := b.store(ctx, tenantID, actor, list, "replace", ""); err != nil {
		return nil, err
	}
	return list, nil
}

// Put validates one budget and sets it: it replaces the budget of its id,
// or joins the list. It returns the tenant's budgets.
func (b *Budgets) Put(ctx context.Context, tenantID, actor string, one Budget) ([]Budget, error) {
	if err := one.Validate(); err != nil {
		return nil, err
	}
	b.writing.Lock()
	defer b.writing.Unlock()
	list, err := b.o.Store.Budgets(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	list = append([]Budget{}, list...)
	found := false
	for i := range list {
		if list[i].ID == one.ID {
			list[i], found = one, true
		}
	}
	if !found {
		list = append(list, one)
	}
	if err := b.store(ctx, tenantID, actor, list, "put", one.ID); err != nil {
		return nil, err
	}
	return list, nil
}

// Delete removes the tenant's budget id; errs.NotFound when there is none.
func (b *Budgets) Delete(ctx context.Context, tenantID, actor, id string) error {
	id = strings.ToLower(id)
	b.writing.Lock()
	defer b.writing.Unlock()
	list, err := b.o.Store.Budgets(ctx, tenantID)
	if err != nil {
		return err
	}
	out := make([]Budget, 0, len(list))
	for _, x := range list {
		if x.ID != id {
			out = append(out, x)
		}
	}
	if len(out) == len(list) {
		return errs.NotFoundf("budget %q not found", id)
	}
	return b.store(ctx, tenantID, actor, out, "delete", id)
}

// store checks list as a whole, stores it, drops the cache here and on the
// other replicas, and audits the change.
func (b *Budgets) store(ctx context.Context, tenantID, actor string, list []Budget, op, id string) error {
	if len(list) > maxBudgets {
		return errs.Invalidf("budgets", "a tenant has at most %d budgets", maxBudgets)
	}
	seen := make(map[string]int, len(list))
	for i, x := range list {
		if j, ok := seen[x.ID]; ok {
			e := errs.Invalidf(fmt.Sprintf("budgets[%d].id", i), "budgets[%d].id %q is also the id of budgets[%d]; ids must be distinct", i, x.ID, j)
			e.Code = "invalid_budget"
			return e
		}
		seen[x.ID] = i
	}
	if _, err := Compile(list); err != nil {
		return err
	}
	err := b.o.Store.ReplaceBudgets(ctx, tenantID, list)
	b.drop(tenantID)
	if err != nil {
		return err
	}
	if b.feed != nil {
		changes.Announce(ctx, b.feed, budgetsTopic, tenantID)
	}
	if b.o.Audit != nil {
		ids := make([]string, len(list))
		for i, x := range list {
			ids[i] = x.ID
		}
		details := map[string]any{"operation": op, "budgets": ids}
		if id != "" {
			details["budget"] = id
		}
		b.o.Audit.Record(ctx, audit.Event{TenantID: tenantID, Actor: actor, Action: "budgets.updated",
			Decision: audit.Allow, Target: "budgets", Details: details})
	}
	return nil
}

// Compiled returns the tenant's budgets compiled; nil when it has none.
func (b *Budgets) Compiled(ctx context.Context, tenantID string) (*Compiled, error) {
	c, err := b.load(ctx, tenantID)
	return c.c, err
}
