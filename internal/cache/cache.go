// Package cache holds svc's cache tiers: exact responses (a chat answer for
// the identical request), tool results (read-only tools' answers an agent
// stores), SOM snapshots, all in one memory-bounded LRU, and the negative
// tier: durable decisions not to optimize something. Every key includes the
// tenant, so nothing is ever shared across tenants.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/metrics"
)

// Tier is a kind of cache.
type Tier string

// The tiers.
const (
	ExactResponse Tier = "exact_response"
	ToolResult    Tier = "tool_result"
	SOM           Tier = "som"
	Negative      Tier = "negative"
)

// Tiers lists every tier, in the order stats show them.
var Tiers = []Tier{ExactResponse, ToolResult, SOM, Negative}

// ParseTier checks a tier name; empty means every tier.
func ParseTier(s string) (Tier, error) {
	if s == "" {
		return "", nil
	}
	for _, t := range Tiers {
		if string(t) == s {
			return t, nil
		}
	}
	return "", errs.Invalidf("cacheType", "cacheType must be one of exact_response, tool_result, som, negative")
}

// NegativeStore keeps the negative tier's decisions.
type NegativeStore interface {
	AddNegative(ctx context.Context, tenantID, key, reason string, at time.Time) error
	// Negative returns the decision's reason; false when there is none.
	Negative(ctx context.Context, tenantID, key string) (string, bool, error)
	CountNegative(ctx context.Context, tenantID string) (int, error)
	ClearNegative(ctx context.Context, tenantID string) error
}

// Cache is every tier.
type Cache struct {
	mem      *memory
	negative NegativeStore
	metrics  *metrics.Metrics
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex
	negHits map[string]int64

	// Replicate: invalidations shared with the other replicas, and counted
	// in the database for those that miss one.
	feed   changes.Feed
	counts Invalidations
	seen   map[Scope]int64 // the counts last read; only Refresh's
}

// Scope is one tenant's tier, or every tier of it when Tier is empty.
type Scope struct {
	TenantID string
	Tier     Tier
}

// Invalidations counts the invalidations of the in-memory tiers in the
// database, so that a replica that missed the notification of one sees the
// count move.
type Invalidations interface {
	CountInvalidation(ctx context.Context, tenantID string, tier Tier) error
	InvalidationCounts(ctx context.Context) (map[Scope]int64, error)
}

// cacheTopic carries invalidations: "<tenant id> <tier>", the tier empty
// for every tier.
const cacheTopic = "cache"

// Options configure a Cache.
type Options struct {
	MaxBytes int64         // SVC_CACHE_MAX_BYTES: the bound of the in-memory tiers
	TTL      time.Duration // SVC_CACHE_TTL: how long an exact response is fresh
	Negative NegativeStore
	Now      func() time.Time
	// Metrics counts each tier's lookups and hits; nil counts nothing.
	Metrics *metrics.Metrics
}

// New returns an empty cache.
func New(o Options) *Cache {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Metrics.KnownCacheTiers(string(ExactResponse), string(ToolResult), string(SOM)) // the negative tier is read through Ignored, not counted
	return &Cache{mem: newMemory(o.MaxBytes), negative: o.Negative, metrics: o.Metrics, ttl: o.TTL, now: o.Now, negHits: map[string]int64{}}
}

// hashKey is the hex SHA-256 of parts, each length-prefixed so that no two
// lists of parts share a key.
func hashKey(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := len(p)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Freshness says what a lookup found.
type Freshness int

// The outcomes of a lookup.
const (
	Miss  Freshness = iota
	Fresh           // within its TTL: may be served
	Stale           // expired: only a fallback may serve it
)

// Lookup returns the tenant's entry of tier under key, and counts the
// lookup (a hit when the entry is fresh).
func (c *Cache) Lookup(tenantID string, tier Tier, key string) (Entry, Freshness) {
	e, f := c.lookup(tenantID, tier, key)
	c.metrics.CacheLookup(string(tier), f == Fresh)
	return e, f
}

func (c *Cache) lookup(tenantID string, tier Tier, key string) (Entry, Freshness) {
	e, ok := c.mem.get(memKey{tenantID, tier, key})
	switch {
	case !ok:
		return Entry{}, Miss
	case c.now().Before(e.ExpiresAt):
		return e, Fresh
	}
	return e, Stale
}

// Served counts a hit of the tenant's tier: an entry that answered a call.
func (c *Cache) Served(tenantID string, tier Tier) { c.mem.hit(tenantID, tier) }

// Store keeps value under key in the tenant's tier for ttl (the cache's
// own TTL when ttl is 0). It reports false when the value is too large to
// keep.
func (c *Cache) Store(tenantID string, tier Tier, key string, value []byte, meta Meta, ttl time.Duration) (Entry, bool) {
	if ttl <= 0 {
		ttl = c.ttl
	}
	now := c.now()
	e := Entry{Value: value, Meta: meta, StoredAt: now, ExpiresAt: now.Add(ttl)}
	return e, c.mem.put(memKey{tenantID, tier, key}, e)
}

// ExactKey is the exact-response key of a chat request: the tenant, app and
// subject, and the body's canonical form without the fields that only
// change how the answer is delivered (stream, stream_options).
func ExactKey(tenantID, app, subject string, body []byte) (string, error) {
	canonical, err := CanonicalRequest(body)
	if err != nil {
		return "", err
	}
	return ExactKeyOf(tenantID, app, subject, canonical), nil
}

// ExactKeyOf is ExactKey of a request already in canonical form.
func ExactKeyOf(tenantID, app, subject string, canonical []byte) string {
	return hashKey([]byte(tenantID), []byte(app), []byte(subject), canonical)
}

// CanonicalRequest is a chat request's canonical JSON without the fields
// that only change how the answer is delivered (stream, stream_options):
// what identifies the request for the cache and for approvals.
func CanonicalRequest(body []byte) ([]byte, error) {
	return canonicalObjectWithout(body, "stream", "stream_options")
}

// ToolKey is the tool-result key of a call: tenant, tool, subject and the
// canonical arguments.
func ToolKey(tenantID, toolName, subject string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	canonical, err := AppendKeyJSON(nil, args)
	if err != nil {
		return "", errs.Invalidf("args", "args must be JSON")
	}
	return hashKey([]byte(tenantID), []byte(toolName), []byte(subject), canonical), nil
}

// Ignore records the decision not to optimize key (a pattern, a request
// shape), for the tenant.
func (c *Cache) Ignore(ctx context.Context, tenantID, key, reason string) error {
	return c.negative.AddNegative(ctx, tenantID, key, reason, c.now())
}

// Ignored returns the reason key is not to be optimized; false when it may
// be. A found decision counts as a hit of the negative tier.
func (c *Cache) Ignored(ctx context.Context, tenantID, key string) (string, bool, error) {
	reason, ok, err := c.negative.Negative(ctx, tenantID, key)
	if ok {
		c.mu.Lock()
		c.negHits[tenantID]++
		c.mu.Unlock()
	}
	return reason, ok, err
}

// Stat is one tier's figures for a tenant.
type Stat struct {
	CacheType Tier  `json:"cacheType"`
	Entries   int   `json:"entries"`
	Hits      int64 `json:"hits"`
}

// Stats returns the tenant's figures of every tier. Hits count since the
// process started.
func (c *Cache) Stats(ctx context.Context, tenantID string) ([]Stat, error) {
	out := make([]Stat, 0, len(Tiers))
	for _, t := range Tiers {
		s := Stat{CacheType: t}
		if t == Negative {
			n, err := c.negative.CountNegative(ctx, tenantID)
			if err != nil {
				return nil, err
			}
			c.mu.Lock()
			s.Entries, s.Hits = n, c.negHits[tenantID]
			c.mu.Unlock()
		} else {
			s.Entries, s.Hits = c.mem.counts(tenantID, t)
		}
		out = append(out, s)
	}
	return out, nil
}

// Invalidate clears the tenant's entries of tier, or of every tier when
// tier is empty. Other tenants' entries stay.
func (c *Cache) Invalidate(ctx context.Context, tenantID string, tier Tier) error {
	if tier == "" || tier == Negative {
		if err := c.negative.ClearNegative(ctx, tenantID); err != nil {
			return err
		}
	}
	if tier != Negative {
		c.mem.invalidate(tenantID, tier)
		if c.feed != nil {
			if err := c.counts.CountInvalidation(ctx, tenantID, tier); err != nil {
				return err
			}
			changes.Announce(ctx, c.feed, cacheTopic, tenantID+" "+string(tier))
		}
	}
	return nil
}

// Replicate shares invalidations with the other replicas of the database:
// Invalidate counts the tenant and tier in counts and announces them on
// feed, and one announced elsewhere drops the same entries here (the
// negative tier is the database's, seen by every replica). When the feed
// reconnects, having perhaps missed one, every in-memory entry is dropped;
// Refresh drops what a count that moved unannounced names. Call it
// before use.
func (c *Cache) Replicate(ctx context.Context, feed changes.Feed, counts Invalidations) error {
	seen, err := counts.InvalidationCounts(ctx)
	if err != nil {
		return err
	}
	c.feed, c.counts, c.seen = feed, counts, seen
	feed.Subscribe(cacheTopic, func(p string) {
		if p == changes.Everything {
			c.mem.invalidateAll()
			return
		}
		tenantID, tier, _ := strings.Cut(p, " ")
		c.mem.invalidate(tenantID, Tier(tier))
	})
	return nil
}

// Refresh reads the invalidation counts and drops the entries of each
// scope whose count moved since the last read: run once per SVC_DB_REFRESH,
// the bound on an invalidation whose notification this replica missed.
func (c *Cache) Refresh(ctx context.Context) {
	now, err := c.counts.InvalidationCounts(ctx)
	if err != nil {
		return // read again next period
	}
	for sc, n := range now {
		if c.seen[sc] != n {
			c.mem.invalidate(sc.TenantID, sc.Tier)
		}
	}
	c.seen = now
}

// Enabled reports whether the in-memory tiers can keep anything.
func (c *Cache) Enabled() bool { return c.mem.max > 0 }

// Bytes is the space the in-memory tiers take, by the cache's accounting.
func (c *Cache) Bytes() int64 { return c.mem.bytes() }

// Tool-result TTLs: the default when a store names none, and the longest
// allowed.
const (
	DefaultToolTTL = 5 * time.Minute
	MaxToolTTL     = 7 * 24 * time.Hour
)

// ToolCall names a read-only tool's call for the tool-result tier.
type ToolCall struct {
	ToolName string
	Subject  string
	Args     json.RawMessage
}

func (tc ToolCall) key(tenantID string) (string, error) {
	name := tc.ToolName
	if name == "" || len(name) > 200 {
		return "", errs.Invalidf("toolName", "toolName must be text of 1 to 200 bytes")
	}
	return ToolKey(tenantID, name, tc.Subject, tc.Args)
}

// CheckTool returns the result stored for the call, if it has not expired.
func (c *Cache) CheckTool(tenantID string, tc ToolCall) (json.RawMessage, bool, error) {
	key, err := tc.key(tenantID)
	if err != nil {
		return nil, false, err
	}
	e, f := c.Lookup(tenantID, ToolResult, key)
	if f != Fresh {
		return nil, false, nil
	}
	c.Served(tenantID, ToolResult)
	return json.RawMessage(e.Value), true, nil
}

// StoreTool keeps the call's result for ttl (DefaultToolTTL when 0) and
// returns when it expires.
func (c *Cache) StoreTool(tenantID string, tc ToolCall, result json.RawMessage, ttl time.Duration) (time.Time, error) {
	key, err := tc.key(tenantID)
	if err != nil {
		return time.Time{}, err
	}
	switch {
	case len(result) == 0 || !json.Valid(result):
		return time.Time{}, errs.Invalidf("result", "result is required (any JSON value)")
	case ttl < 0 || ttl > MaxToolTTL:
		return time.Time{}, errs.Invalidf("ttlSeconds", "ttlSeconds must be between 1 and %d", int(MaxToolTTL.Seconds()))
	case ttl == 0:
		ttl = DefaultToolTTL
	}
	e, ok := c.Store(tenantID, ToolResult, key, append([]byte(nil), result...), Meta{}, ttl)
	if !ok {
		return time.Time{}, errs.E(errs.TooLarge, "result_too_large", "the result is too large to cache")
	}
	return e.ExpiresAt, nil
}

// SOMKey is the SOM tier's key of a page: the tenant and the URL.
func SOMKey(tenantID, url string) string { return hashKey([]byte(tenantID), []byte(url)) }

// LookupSOM returns the tenant's compiled page for url while it is fresh,
// counting the hit.
func (c *Cache) LookupSOM(tenantID, url string) ([]byte, bool) {
	e, f := c.Lookup(tenantID, SOM, SOMKey(tenantID, url))
	if f != Fresh {
		return nil, false
	}
	c.Served(tenantID, SOM)
	return e.Value, true
}

// StoreSOM keeps the tenant's compiled page for url for ttl.
func (c *Cache) StoreSOM(tenantID, url string, som []byte, ttl time.Duration) bool {
	_, ok := c.Store(tenantID, SOM, SOMKey(tenantID, url), som, Meta{}, ttl)
	return ok
}

// ForgetTenant drops every in-memory entry of a deleted tenant; its
// negative tier went with its rows.
func (c *Cache) ForgetTenant(tenantID string) { c.mem.invalidate(tenantID, "") }
