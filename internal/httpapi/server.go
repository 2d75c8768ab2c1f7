// Package httpapi is svc's HTTP surface: routes, middleware, handlers and the
// one table that turns error kinds into statuses. Handlers stay thin: they
// decode, call a domain service and encode.
package httpapi

import (
	"context"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/ratelimit"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/workflows"
)

// Pinger reports whether storage answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps is what the HTTP layer needs from the rest of svc.
type Deps struct {
	Config *config.Config
	Logger hclog.Logger
	Store  Pinger
	// DBEngine names the database's engine for /health: sqlite or
	// postgres.
	DBEngine string
	// Draining reports that svc is stopping: /health then answers 503 so
	// that a load balancer sends new requests elsewhere while the
	// in-flight ones finish. Nil is never.
	Draining func() bool
	Auth     *auth.Authenticator
	Keys     *auth.Keys
	// Accounts and Sessions serve people: login, organizations,
	// invitations, signup.
	Accounts *accounts.Service
	Sessions *auth.SessionManager
	// Devices recognizes browsers that signed in to an account before;
	// their sign-ins do not share the account's bucket of attempts.
	Devices  *auth.Devices
	Settings *settings.Service
	Audit    *audit.Log
	Gateway  *gateway.Gateway
	Runs     *ledger.Service
	// DeletedResponses keeps which responses the Responses API deleted.
	DeletedResponses ResponseDeletions
	// Feed publishes each recorded run to the live streams of its tenant;
	// StreamPing is how often an idle stream pings (0 is
	// DefaultStreamPing).
	Feed       *ledger.Feed
	StreamPing time.Duration
	// Ledger lists the signed checkpoints of the run ledger and its key.
	Ledger *ledger.Checkpointer
	// Governor applies policies; Tracer appends traced events through it.
	Governor *governance.Governor
	Tracer   *governance.Tracer
	// Reload loads the policy folder again, as SIGHUP does.
	Reload func() (policy.Status, error)
	// Providers routes the gateway's calls; its Status answers GET
	// /api/v1/providers. ReloadProviders loads SVC_PROVIDERS_FILE again,
	// as SIGHUP does.
	Providers       *providers.Router
	ReloadProviders func(ctx context.Context) (providers.Status, error)
	Approvals       *approval.Service
	Cache           *cache.Cache
	Jobs            *jobs.Queue

	// Budgets keeps the tenants' budgets; Spend reads their spend
	// counters.
	Budgets BudgetBook
	Spend   SpendReports
	// Learning answers patterns, artifacts and learning passes, and turns
	// ratings of artifact-served runs into evidence.
	Learning *learning.Service
	// Workflows answers the workflows list, onboarding and seed-demo.
	Workflows *workflows.Service
	// SemanticWeb fetches and compiles pages; WebSessions keeps agents'
	// browsing sessions.
	SemanticWeb *browse.Service
	WebSessions *browse.Sessions
	Web         fs.FS // the dashboard's files
	External    bool  // whether the external page compiler is installed
	Now         func() time.Time
	// Buckets, when set, keeps the limiters' buckets where every replica
	// draws on them (PostgreSQL), so that a limit holds on a caller's total;
	// nil keeps them in this process's memory.
	Buckets ratelimit.Buckets

	// Metrics are the Prometheus metrics, served at GET /metrics; nil when
	// SVC_METRICS=off.
	Metrics *metrics.Metrics
	// Spans starts each request's server span; nil traces nothing, but an
	// incoming traceparent is still passed on to the provider.
	Spans trace.Tracer
}

// ResponseDeletions records deleted responses; their runs stay.
type ResponseDeletions interface {
	DeleteResponse(ctx context.Context, tenantID, runID string, at time.Time) (bool, error)
	ResponseDeleted(ctx context.Context, tenantID, runID string) (bool, error)
}

// Server holds the HTTP handlers.
type Server struct {
	Deps
	log hclog.Logger
	mux *http.ServeMux
	// apiLimiter is the standard limiter of /api/v1, one bucket per caller.
	apiLimiter ratelimit.Keyed
	// abuseLimiter holds the per-address buckets of the account endpoints:
	// 10 a minute.
	abuseLimiter ratelimit.Keyed
	// accountLimiter holds one bucket of sign-in attempts per account, so
	// that guesses at one password from many addresses are slowed too: 10,
	// then one every 30 seconds; and one as large per device that signed in
	// to the account before, so that those guesses cannot lock its owner
	// out.
	accountLimiter ratelimit.Keyed
	// The refusals of each limiter, counted.
	apiLimited, abuseLimited, accountLimited *metrics.Counter
	// csrf refuses cross-site requests that would act with a session
	// cookie.
	csrf    *http.CrossOriginProtection
	files   http.Handler // the dashboard's file server
	handler http.Handler
	// streamPing is StreamPing, its default filled.
	streamPing time.Duration
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.Now == nil {
		d.Now = time.Now
	}
	s := &Server{Deps: d, log: d.Logger, mux: http.NewServeMux(), files: http.FileServerFS(d.Web), streamPing: d.StreamPing}
	if s.streamPing <= 0 {
		s.streamPing = DefaultStreamPing
	}
	every := time.Duration(0)
	if d.Config.RateLimit > 0 {
		every = time.Minute / time.Duration(d.Config.RateLimit)
	}
	// Without its database the standard limiter lets callers through (the
	// error logged): refusing every caller would take svc down with it. The
	// buckets between a guesser and a password stay shut.
	s.apiLimiter = s.limiter("api", every, max(1, d.Config.RateLimit/10), ratelimit.FailOpen)
	s.abuseLimiter = s.limiter("abuse", 6*time.Second, 10, ratelimit.FailClosed)
	s.accountLimiter = s.limiter("account", 30*time.Second, 10, ratelimit.FailClosed)
	s.apiLimited, s.abuseLimited, s.accountLimited = d.Metrics.RateLimiter("api"), d.Metrics.RateLimiter("abuse"), d.Metrics.RateLimiter("account")
	s.csrf = http.NewCrossOriginProtection()
	if u, err := url.Parse(d.Config.AppBaseURL); err == nil && u.Host != "" {
		// Behind a proxy the Host svc sees may differ from the address
		// people use.
		_ = s.csrf.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	s.routes()
	// The request's log line, span and metrics wrap the panic recovery, so
	// that a panic's 500 is logged, observed and ends its span like any
	// answer.
	s.handler = s.logRequests(s.recoverPanics(s.securityHeaders(s.cors(s.limitBody(s.mux)))))
	return s
}

// limiter is the limiter name, shared through Buckets when there are
// some, else in memory.
func (s *Server) limiter(name string, every time.Duration, burst int, onError ratelimit.OnError) ratelimit.Keyed {
	if s.Buckets != nil {
		l := ratelimit.NewShared(s.Buckets, name, every, burst, onError, s.log.Named("ratelimit"))
		l.Now = s.Now
		return l
	}
	l := ratelimit.New(every, burst, 100_000)
	l.Now = s.Now
	return ratelimit.Local(l)
}

// Handler returns the root handler with every middleware applied.
func (s *Server) Handler() http.Handler { return s.handler }

// handlerFunc is a handler that returns its error instead of writing it, so
// that no handler can forget to stop after a failure.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error
