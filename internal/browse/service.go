package browse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/paging"
	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/som"
)

// Where a fetch's SOM came from.
const (
	SourceBuiltin  = "builtin"  // svc's own compiler
	SourceExternal = "external" // the external compiler, after a browser drew the page
	SourceCache    = "cache"    // the som cache tier
)

// DefaultSOMTTL is how long a compiled page is served from the cache.
const DefaultSOMTTL = 5 * time.Minute

// Snapshot is a stored compile of a page.
type Snapshot struct {
	ID         string          `json:"id"`
	TenantID   string          `json:"-"`
	URL        string          `json:"url"`
	Source     string          `json:"source"`
	HTMLBytes  int             `json:"htmlBytes"`
	SOMBytes   int             `json:"somBytes"`
	DriftScore *float64        `json:"driftScore"` // against the previous snapshot of the URL
	SOM        json.RawMessage `json:"som,omitempty"`
	CreatedAt  time.Time       `json:"createdAt"`
}

// SnapshotStore keeps snapshots and the fetches served, per tenant.
type SnapshotStore interface {
	SaveSnapshot(ctx context.Context, s Snapshot) error
	// LatestSnapshot returns the tenant's newest snapshot of url, or
	// errs.NotFound.
	LatestSnapshot(ctx context.Context, tenantID, url string) (Snapshot, error)
	// Snapshot returns one snapshot of the tenant, or errs.NotFound.
	Snapshot(ctx context.Context, tenantID, id string) (Snapshot, error)
	// ListSnapshots returns the tenant's snapshots newest first, without
	// their SOM, and how many there are.
	ListSnapshots(ctx context.Context, tenantID, url string, limit, offset int) ([]Snapshot, int, error)
	// RecordFetch notes a fetch served and the prompt tokens it saved.
	RecordFetch(ctx context.Context, tenantID, snapshotID string, cached bool, tokensSaved int, at time.Time) error
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Fetcher serves every caller but open dev mode's: the address guard
	// with the operator's exceptions.
	Fetcher *fetch.Fetcher
	// OpenFetcher, when set, serves open dev mode's callers (no users, no
	// SVC_API_KEY), who may fetch private addresses. It never serves a
	// key or a signed-in person, so that accounts close it at once.
	OpenFetcher *fetch.Fetcher
	External    pluginapi.PageCompiler // nil when no external compiler is installed
	Cache       *cache.Cache
	CacheTTL    time.Duration
	Store       SnapshotStore
	Logger      hclog.Logger
	Now         func() time.Time
	// Metrics counts the fetches served, by source; nil counts nothing.
	Metrics *metrics.Metrics
}

// Service fetches and compiles pages for agents.
type Service struct {
	o ServiceOptions
	// fetched counts the fetches served from each source.
	fetched map[string]*metrics.Counter
}

// NewService returns a service.
func NewService(o ServiceOptions) *Service {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultSOMTTL
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o, fetched: map[string]*metrics.Counter{}}
	for _, source := range []string{SourceBuiltin, SourceExternal, SourceCache} {
		s.fetched[source] = o.Metrics.WebFetched(source)
	}
	return s
}

// External reports whether the external compiler is installed.
func (s *Service) External() bool { return s.o.External != nil }

// FetchResult is the answer of POST /api/v1/web/fetch.
type FetchResult struct {
	SnapshotID          string          `json:"snapshotId"`
	SOM                 json.RawMessage `json:"som"`
	Source              string          `json:"source"`
	Cached              bool            `json:"cached"`
	HTMLBytes           int             `json:"htmlBytes"`
	SOMBytes            int             `json:"somBytes"`
	TokensSavedEstimate int             `json:"tokensSavedEstimate"`
	Diff                *som.Delta      `json:"diff,omitempty"`
	Context             string          `json:"context"`

	// encoded is the answer already written as JSON, when it came from the
	// cache: a hit is served without decoding and encoding the SOM again.
	encoded []byte
}

// JSON returns the answer's JSON encoding.
func (r FetchResult) JSON() ([]byte, error) {
	if r.encoded != nil {
		return r.encoded, nil
	}
	return json.Marshal(r)
}

// A cached answer is stored as "<snapshot id> <tokens saved>\n<JSON>", the
// JSON already saying source "cache" and cached true.
func encodeCached(r FetchResult) ([]byte, error) {
	r.Source, r.Cached, r.Diff = SourceCache, true, nil
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("%s %d\n", r.SnapshotID, r.TokensSavedEstimate)
	return append([]byte(head), body...), nil
}

func decodeCached(b []byte) (FetchResult, bool) {
	head, body, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return FetchResult{}, false
	}
	var r FetchResult
	if _, err := fmt.Sscanf(string(head), "%s %d", &r.SnapshotID, &r.TokensSavedEstimate); err != nil {
		return FetchResult{}, false
	}
	r.Source, r.Cached, r.encoded = SourceCache, true, body
	return r, true
}

// TokensSaved estimates the prompt tokens an agent saves by reading the
// SOM's context instead of the page: about four bytes a token, as
// tokenizers average on English text and markup.
func TokensSaved(htmlBytes, somBytes int) int {
	return max(0, (htmlBytes-somBytes)/4)
}

// Fetch returns the SOM of url for the tenant: from the cache while fresh
// (unless bypassCache), else fetched through the guard and compiled, with a
// diff against the tenant's previous snapshot of the URL. Every compile is
// stored as a snapshot; every answer counts the tokens it saved.
func (s *Service) Fetch(ctx context.Context, id *auth.Identity, url string, bypassCache bool) (FetchResult, error) {
	tenantID := id.TenantID
	// Observe mode never serves from a cache.
	if !bypassCache && id.Mode != auth.Observe {
		if b, ok := s.o.Cache.LookupSOM(tenantID, url); ok {
			if r, ok := decodeCached(b); ok {
				s.recordFetch(ctx, tenantID, r, true)
				return r, nil
			}
		}
	}
	page, err := s.fetcherFor(id).Get(ctx, url, nil)
	if err != nil {
		return FetchResult{}, err
	}
	var prev *som.Snapshot
	if last, err := s.o.Store.LatestSnapshot(ctx, tenantID, url); err == nil {
		prev = new(som.Snapshot)
		if json.Unmarshal(last.SOM, prev) != nil {
			prev = nil
		}
	} else if !errs.Is(err, errs.NotFound) {
		return FetchResult{}, err
	}
	snap, source, err := s.compile(ctx, page, prev)
	if err != nil {
		return FetchResult{}, err
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		return FetchResult{}, err
	}
	r := FetchResult{SnapshotID: ids.Ordered("snap", s.o.Now()), SOM: raw, Source: source, HTMLBytes: len(page.Body),
		SOMBytes: snap.Meta.SOMBytes, Context: snap.Context}
	r.TokensSavedEstimate = TokensSaved(r.HTMLBytes, r.SOMBytes)
	rec := Snapshot{ID: r.SnapshotID, TenantID: tenantID, URL: url, Source: source, HTMLBytes: r.HTMLBytes,
		SOMBytes: r.SOMBytes, SOM: raw, CreatedAt: s.o.Now().UTC().Truncate(time.Millisecond)}
	if prev != nil {
		d := som.Diff(prev, snap)
		r.Diff, rec.DriftScore = &d, &d.DriftScore
	}
	if err := s.o.Store.SaveSnapshot(ctx, rec); err != nil {
		return FetchResult{}, err
	}
	s.recordFetch(ctx, tenantID, r, false)
	if b, err := encodeCached(r); err == nil {
		s.o.Cache.StoreSOM(tenantID, url, b, s.o.CacheTTL)
	}
	return r, nil
}

// fetcherFor returns the fetcher whose address rules apply to id.
func (s *Service) fetcherFor(id *auth.Identity) *fetch.Fetcher {
	return s.fetcher(id.Via == auth.ViaOpen)
}

// fetcher returns open dev mode's fetcher when open, else everyone else's.
func (s *Service) fetcher(open bool) *fetch.Fetcher {
	if open && s.o.OpenFetcher != nil {
		return s.o.OpenFetcher
	}
	return s.o.Fetcher
}

func (s *Service) recordFetch(ctx context.Context, tenantID string, r FetchResult, cached bool) {
	s.fetched[r.Source].Inc()
	err := s.o.Store.RecordFetch(context.WithoutCancel(ctx), tenantID, r.SnapshotID, cached, r.TokensSavedEstimate, s.o.Now())
	if err != nil {
		s.o.Logger.Warn("recording a web fetch failed", "error", err)
	}
}

// compile compiles the fetched page with svc's compiler, and hands a page
// that only scripts fill to the external compiler when one is installed.
// Should the external compiler fail, the built-in snapshot stands.
func (s *Service) compile(ctx context.Context, page *fetch.Result, prev *som.Snapshot) (*som.Snapshot, string, error) {
	snap, _, err := som.Compile(som.Input{HTML: page.Body, ContentType: page.ContentType, URL: page.URL.String(), Previous: prev})
	if err != nil {
		return nil, "", somError(err)
	}
	if s.o.External == nil || !ScriptDrawn(snap, page.Body) {
		return snap, SourceBuiltin, nil
	}
	b, err := s.o.External.Compile(ctx, pluginapi.Page{URL: page.URL.String(), HTML: page.Body, ContentType: page.ContentType})
	if err != nil {
		s.o.Logger.Warn("external compile failed; the built-in snapshot stands", "url", page.URL.String(), "error", err)
		return snap, SourceBuiltin, nil
	}
	var ext som.Snapshot
	if err := json.Unmarshal(b, &ext); err != nil {
		s.o.Logger.Warn("external compiler answered no snapshot; the built-in one stands", "error", err)
		return snap, SourceBuiltin, nil
	}
	ext.Meta.HTMLBytes = len(page.Body)
	return &ext, SourceExternal, nil
}

// ScriptDrawn guesses that scripts draw a page: it has scripts and, without
// running them, almost nothing to read or act on.
func ScriptDrawn(snap *som.Snapshot, html []byte) bool {
	if !bytes.Contains(bytes.ToLower(html), []byte("<script")) {
		return false
	}
	c := snap.Meta.Counts
	return c.Interactive < 3 && c.Elements < 8
}

// Snapshot listing's page sizes.
const (
	DefaultSnapshotLimit = 50
	MaxSnapshotLimit     = 500
)

// Snapshots lists the tenant's stored snapshots (of url, when given),
// newest first, a page of limit (0: the default) from offset.
func (s *Service) Snapshots(ctx context.Context, tenantID, url string, limit, offset int) ([]Snapshot, int, error) {
	limit, err := paging.Limit(limit, DefaultSnapshotLimit, MaxSnapshotLimit)
	if err != nil {
		return nil, 0, err
	}
	if offset, err = paging.Offset(offset); err != nil {
		return nil, 0, err
	}
	return s.o.Store.ListSnapshots(ctx, tenantID, url, limit, offset)
}

// SnapshotByID returns one of the tenant's snapshots with its SOM.
func (s *Service) SnapshotByID(ctx context.Context, tenantID, id string) (Snapshot, error) {
	return s.o.Store.Snapshot(ctx, tenantID, id)
}
