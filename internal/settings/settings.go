// Package settings holds each tenant's settings: their defaults, the rules a
// value must meet, and the public view that never shows a secret.
package settings

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	// The zone database is built in: a replica on a host without one
	// must count a tenant's spend in the same windows as the others.
	_ "time/tzdata"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// The setting keys, named as the spec names them.
const (
	RetentionDays             = "retention_days"
	Redaction                 = "redaction"
	WebhookURL                = "webhook_url"
	WebhookSecret             = "webhook_secret"
	ApprovalExceptionTTLHours = "approval_exception_ttl_hours"
	CanaryEnabled             = "canary_enabled"
	// ApprovalPendingLimit is how many approvals one API key (or one
	// signed-in user) may have pending at once: past it, a request a rule
	// would hold is refused with 429 instead, so that no caller can flood
	// the people deciding.
	ApprovalPendingLimit = "approval_pending_limit"
	// Timezone is the IANA time zone whose hours, days and calendar months
	// the tenant's spend counters and budgets count in.
	Timezone = "timezone"
)

// Keys lists every supported setting, in display order.
var Keys = []string{RetentionDays, Redaction, WebhookURL, WebhookSecret, ApprovalExceptionTTLHours, CanaryEnabled,
	ApprovalPendingLimit, Timezone}

// SecretMarker is what a read shows in place of a secret that is set.
const SecretMarker = "[set]"

// Settings is one tenant's settings, defaults filled in.
type Settings struct {
	RetentionDays             float64
	Redaction                 bool
	WebhookURL                *string
	WebhookSecret             *string
	ApprovalExceptionTTLHours float64
	CanaryEnabled             bool
	ApprovalPendingLimit      int
	Timezone                  string
}

// Defaults returns the settings of a tenant that changed nothing.
func Defaults() Settings {
	return Settings{RetentionDays: 30, ApprovalExceptionTTLHours: 24, ApprovalPendingLimit: 20, Timezone: "UTC"}
}

// Public returns the settings as the API shows them: snake_case keys, the
// webhook secret replaced by SecretMarker.
func (s Settings) Public() map[string]any {
	var secret any
	if s.WebhookSecret != nil {
		secret = SecretMarker
	}
	return map[string]any{
		RetentionDays:             s.RetentionDays,
		Redaction:                 s.Redaction,
		WebhookURL:                s.WebhookURL,
		WebhookSecret:             secret,
		ApprovalExceptionTTLHours: s.ApprovalExceptionTTLHours,
		CanaryEnabled:             s.CanaryEnabled,
		ApprovalPendingLimit:      s.ApprovalPendingLimit,
		Timezone:                  s.Timezone,
	}
}

// Store persists settings that differ from the defaults, as JSON values.
type Store interface {
	// TenantSettings returns the stored values of the tenant.
	TenantSettings(ctx context.Context, tenantID string) (map[string]json.RawMessage, error)
	// PutTenantSetting stores one value.
	PutTenantSetting(ctx context.Context, tenantID, key string, value json.RawMessage, at time.Time) error
}

// URLChecker decides whether a URL may be called from the server.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) (*url.URL, error)
}

// Service reads and validates settings. It keeps each tenant's settings
// in memory once read, since the request path asks for them (redaction),
// and drops them when they change, here or, through Replicate, on another
// replica of the database.
type Service struct {
	store  Store
	guard  URLChecker
	now    func() time.Time
	cached sync.Map // tenant id → cachedSettings

	mu  sync.Mutex
	gen map[string]uint64 // bumped by each Set, so that a read older than a change is never cached
	// epoch is bumped when every tenant's settings are dropped at once, for
	// the same reason.
	epoch uint64

	// With several replicas (Replicate): each Set is announced on feed and
	// heard from the others, and no entry is trusted longer than refresh.
	feed    changes.Feed
	refresh time.Duration
}

// cachedSettings is a tenant's settings as read, and when (only kept with a
// refresh bound).
type cachedSettings struct {
	st     Settings
	loaded time.Time
}

// settingsTopic carries the id of a tenant whose settings changed.
const settingsTopic = "settings"

// NewService returns a settings service. guard vets webhook URLs.
func NewService(store Store, guard URLChecker, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, guard: guard, now: now, gen: map[string]uint64{}}
}

// Get returns the tenant's settings.
func (s *Service) Get(ctx context.Context, tenantID string) (Settings, error) {
	var now time.Time
	if c, ok := s.cached.Load(tenantID); ok {
		c := c.(cachedSettings)
		if s.refresh <= 0 {
			return c.st, nil
		}
		if now = s.now(); now.Sub(c.loaded) < s.refresh {
			return c.st, nil
		}
	} else if s.refresh > 0 {
		now = s.now()
	}
	s.mu.Lock()
	gen, epoch := s.gen[tenantID], s.epoch
	s.mu.Unlock()
	stored, err := s.store.TenantSettings(ctx, tenantID)
	if err != nil {
		return Settings{}, err
	}
	out := Defaults()
	for k, raw := range stored {
		// Values were validated on the way in; one that no longer parses
		// (a key from a newer version, say) keeps its default.
		_ = out.apply(k, raw)
	}
	s.mu.Lock()
	if s.gen[tenantID] == gen && s.epoch == epoch {
		s.cached.Store(tenantID, cachedSettings{st: out, loaded: now})
	}
	s.mu.Unlock()
	return out, nil
}

// Replicate makes the cache follow the other replicas of the database: Set
// announces the tenant on feed, a tenant whose settings changed elsewhere
// is dropped when its notification arrives, and an entry older than refresh
// is read again, the bound on a lost notification. Call it before use.
func (s *Service) Replicate(feed changes.Feed, refresh time.Duration) {
	s.feed, s.refresh = feed, refresh
	feed.Subscribe(settingsTopic, s.drop)
}

// drop forgets a tenant's cached settings, or every tenant's for
// changes.Everything; a read in flight does not put them back.
func (s *Service) drop(tenantID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tenantID == changes.Everything {
		s.epoch++
		s.cached.Clear()
		return
	}
	s.gen[tenantID]++
	s.cached.Delete(tenantID)
}

// RetentionDays is how many days of runs the tenant keeps.
func (s *Service) RetentionDays(ctx context.Context, tenantID string) (float64, error) {
	st, err := s.Get(ctx, tenantID)
	return st.RetentionDays, err
}

// Redaction reports whether the tenant's stored text is to be masked; a
// tenant whose settings cannot be read is masked, the safe side.
func (s *Service) Redaction(ctx context.Context, tenantID string) bool {
	st, err := s.Get(ctx, tenantID)
	return err != nil || st.Redaction
}

// Canary reports whether the tenant serves promoted artifacts to a share of
// their requests only (canary_enabled); a tenant whose settings cannot be
// read is treated as canary, the careful side.
func (s *Service) Canary(ctx context.Context, tenantID string) bool {
	st, err := s.Get(ctx, tenantID)
	return err != nil || st.CanaryEnabled
}

// PendingApprovalLimit is how many approvals one caller of the tenant may
// have pending at once.
func (s *Service) PendingApprovalLimit(ctx context.Context, tenantID string) (int, error) {
	st, err := s.Get(ctx, tenantID)
	return st.ApprovalPendingLimit, err
}

// Zone is the tenant's time zone (the timezone setting). When the
// settings cannot be read it is the zone last read, so that a moment's
// outage does not move a tenant's spend into other windows; UTC when none
// was. It implements spend.Zones.
func (s *Service) Zone(ctx context.Context, tenantID string) *time.Location {
	st, err := s.Get(ctx, tenantID)
	if err != nil {
		c, ok := s.cached.Load(tenantID)
		if !ok {
			return time.UTC
		}
		st = c.(cachedSettings).st
	}
	loc, err := location(st.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// zones keeps each time zone loaded, by name: loading one reads the zone
// database, and Zone is on the request path.
var zones sync.Map // name → *time.Location

// location loads the IANA zone name; "Local" and the empty name, which
// time.LoadLocation accepts, are not IANA names and are refused.
func location(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	if name == "" || name == "Local" || len(name) > maxZoneName {
		return nil, errors.New("not an IANA time zone")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// maxZoneName bounds a time zone's name (the longest IANA name is about
// 30 characters).
const maxZoneName = 64

// ExceptionTTL is how long an approved request of the tenant passes again.
func (s *Service) ExceptionTTL(ctx context.Context, tenantID string) (time.Duration, error) {
	st, err := s.Get(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	return time.Duration(st.ApprovalExceptionTTLHours * float64(time.Hour)), nil
}

// Set validates and stores one setting, returning the settings after it.
// Returns errs.Invalid naming the key for an unknown key or a bad value.
func (s *Service) Set(ctx context.Context, tenantID, key string, value json.RawMessage) (Settings, error) {
	if !slices.Contains(Keys, key) {
		return Settings{}, errs.E(errs.Invalid, "unsupported_setting", "unsupported setting %q (supported: %s)", key, strings.Join(Keys, ", "))
	}
	normalized, err := s.validate(ctx, key, value)
	if err != nil {
		return Settings{}, err
	}
	err = s.store.PutTenantSetting(ctx, tenantID, key, normalized, s.now())
	s.drop(tenantID)
	if err != nil {
		return Settings{}, err
	}
	if s.feed != nil {
		changes.Announce(ctx, s.feed, settingsTopic, tenantID)
	}
	return s.Get(ctx, tenantID)
}

// maxPendingLimit bounds approval_pending_limit.
const maxPendingLimit = 10_000

func invalid(key, format string, args ...any) error {
	e := errs.Invalidf(key, key+": "+format, args...)
	e.Code = "invalid_setting"
	return e
}

// validate checks value for key and returns the JSON to store.
func (s *Service) validate(ctx context.Context, key string, value json.RawMessage) (json.RawMessage, error) {
	raw := strings.TrimSpace(string(value))
	switch key {
	case RetentionDays, ApprovalExceptionTTLHours:
		var n float64
		if err := json.Unmarshal([]byte(raw), &n); err != nil || raw == "null" {
			return nil, invalid(key, "must be a positive number")
		}
		if n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) || n > 1e6 {
			return nil, invalid(key, "must be a positive number no larger than 1000000")
		}
		return json.Marshal(n)
	case ApprovalPendingLimit:
		var n float64
		if err := json.Unmarshal([]byte(raw), &n); err != nil || raw == "null" || n != math.Trunc(n) || n < 1 || n > maxPendingLimit {
			return nil, invalid(key, "must be a whole number from 1 to %d", maxPendingLimit)
		}
		return json.Marshal(int(n))
	case Redaction, CanaryEnabled:
		if raw != "true" && raw != "false" {
			return nil, invalid(key, "must be true or false")
		}
		return json.RawMessage(raw), nil
	case WebhookURL:
		str, isNull, err := nullableString(raw)
		if err != nil {
			return nil, invalid(key, "must be null or an http(s) URL")
		}
		if isNull {
			return json.RawMessage("null"), nil
		}
		if len(str) > 2048 {
			return nil, invalid(key, "must be at most 2048 characters")
		}
		u, err := s.guard.CheckURL(ctx, str)
		if err != nil {
			return nil, invalid(key, "%s", urlProblem(err))
		}
		return json.Marshal(u.String())
	case Timezone:
		str, isNull, err := nullableString(raw)
		if err != nil {
			return nil, invalid(key, "must be an IANA time zone name, such as \"Europe/Paris\"")
		}
		if isNull {
			return json.Marshal("UTC")
		}
		if _, err := location(str); err != nil {
			return nil, invalid(key, "%q is not an IANA time zone name (such as \"Europe/Paris\")", truncate(str, maxZoneName))
		}
		return json.Marshal(str)
	case WebhookSecret:
		str, isNull, err := nullableString(raw)
		if err != nil {
			return nil, invalid(key, "must be null or a string")
		}
		if isNull {
			return json.RawMessage("null"), nil
		}
		if len(str) > 1024 {
			return nil, invalid(key, "must be at most 1024 characters")
		}
		return json.Marshal(str)
	}
	return nil, errs.E(errs.Internal, "internal", "setting %q has no validator", key)
}

// truncate cuts s to at most n bytes, for quoting a caller's value back.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// urlProblem turns a guard error into the reason a person reads.
func urlProblem(err error) string {
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return "must point to a public address: " + err.Error()
	case errors.Is(err, netguard.ErrUnresolvable):
		return "host does not resolve: " + err.Error()
	default:
		return "must be an http(s) URL: " + err.Error()
	}
}

// nullableString reads a JSON string or null; the empty string counts as
// null, so clearing a form field clears the setting.
func nullableString(raw string) (string, bool, error) {
	if raw == "null" {
		return "", true, nil
	}
	var str string
	if err := json.Unmarshal([]byte(raw), &str); err != nil {
		return "", false, err
	}
	str = strings.TrimSpace(str)
	return str, str == "", nil
}

// apply sets one stored value on s.
func (s *Settings) apply(key string, raw json.RawMessage) error {
	switch key {
	case RetentionDays:
		return json.Unmarshal(raw, &s.RetentionDays)
	case ApprovalExceptionTTLHours:
		return json.Unmarshal(raw, &s.ApprovalExceptionTTLHours)
	case Redaction:
		return json.Unmarshal(raw, &s.Redaction)
	case CanaryEnabled:
		return json.Unmarshal(raw, &s.CanaryEnabled)
	case ApprovalPendingLimit:
		return json.Unmarshal(raw, &s.ApprovalPendingLimit)
	case WebhookURL:
		return json.Unmarshal(raw, &s.WebhookURL)
	case WebhookSecret:
		return json.Unmarshal(raw, &s.WebhookSecret)
	case Timezone:
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return err
		}
		if _, err := location(name); err != nil {
			return err
		}
		s.Timezone = name
	}
	return nil
}
