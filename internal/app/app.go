// Package app is svc's composition root: it builds every component from the
// configuration, starts them as a stack and stops them in reverse order.
// cmd/svc runs it, and tests that need a whole service in process build it
// here too, with seams for what they stand in for.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpapi"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/ratelimit"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/tracing"
	"github.com/svc-gateway/svc/internal/version"
	"github.com/svc-gateway/svc/internal/webhook"
	"github.com/svc-gateway/svc/internal/workflows"
	"github.com/svc-gateway/svc/pkg/netguard"
	"github.com/svc-gateway/svc/pkg/pluginapi"
	webfiles "github.com/svc-gateway/svc/web"
)

// Notifier receives a tenant's notable events (policy.blocked,
// ledger.checkpoint, …); *webhook.Notifier delivers them to its webhook.
type Notifier interface {
	Notify(ctx context.Context, tenantID, eventType string, data any)
}

// Options configure an App. Config is required; the other fields are seams
// for tests, and their zero values are what svc runs with.
type Options struct {
	Config *config.Config
	// Logger receives svc's log; nil discards it.
	Logger hclog.Logger

	// Now is the clock of what waits, expires or is limited: sessions,
	// invitations, approvals, the cache, the job queue, rate limits,
	// checkpoints, learning. Runs, audit events and keys are stamped with
	// the real time, so that their time-ordered ids keep the order they
	// were made in. Nil is time.Now.
	Now func() time.Time
	// Provider stands in for the plugin host: no plugin process starts,
	// the gateway calls Provider (a set of one provider), and no external
	// page compiler is installed. Mailer is then required, the email slot
	// being the host's. With SVC_PROVIDERS_FILE the file's instances serve
	// instead.
	Provider pluginapi.Provider
	// ProviderSecrets are strings the gateway never shows, beside
	// PROVIDER_API_KEY: a stand-in provider's key.
	ProviderSecrets []string
	// Mailer sends the accounts' emails; nil sends through the plugin
	// host's email slot.
	Mailer accounts.Mailer
	// DataDir, when set, holds the database (svc.db), its run journal and
	// the ledger key, in place of SVC_DB and SVC_LEDGER_KEY_FILE.
	DataDir string
	// Resolver answers the DNS queries of every address check (webhook
	// URLs and their deliveries, page fetches); nil is the system's.
	Resolver netguard.Resolver
	// Notifier receives the notable events in place of webhook deliveries.
	Notifier Notifier
	// Argon2 is the cost of password hashing; zero is auth.DefaultArgon2.
	Argon2 auth.Argon2Params
	// Files are the dashboard's files; nil is the embedded ones.
	Files fs.FS
	// StreamPing is how often a live stream of runs with nothing to send
	// pings; zero is httpapi.DefaultStreamPing.
	StreamPing time.Duration
}

// App is one svc: New builds it, Start runs it, Close stops it. Its
// exported fields are the components tests reach for.
type App struct {
	Config   *config.Config
	Logger   hclog.Logger
	Store    *store.Store
	Policies *policy.Engine
	Accounts *accounts.Service
	Sessions *auth.SessionManager
	Keys     *auth.Keys
	// Auth resolves each request's caller; its Access names the mode svc
	// admits callers in.
	Auth  *auth.Authenticator
	Cache *cache.Cache
	// Jobs is the persistent job queue; its workers run from Start to
	// Close, and tests drive it with RunDue instead.
	Jobs *jobs.Queue
	// Learning runs the learning loop: passes, gates, the serving index.
	Learning *learning.Service
	// Recorder journals each run before its answer leaves and stores it
	// in the background; Sync waits until it has.
	Recorder *ledger.Recorder
	// Checkpoints signs the ledger's checkpoints, in the background from
	// Start; tests seal them with Seal.
	Checkpoints *ledger.Checkpointer
	// Providers routes each call to the provider instances of the current
	// set: the providers file's, or the one provider of the environment.
	Providers *providers.Router
	// Metrics are svc's Prometheus metrics; nil when SVC_METRICS=off.
	Metrics *metrics.Metrics

	// providersFile reloads SVC_PROVIDERS_FILE; nil without one.
	providersFile *providers.Manager

	devices  *auth.Devices
	now      func() time.Time
	handler  http.Handler
	listener net.Listener
	failed   chan error
	// metricsAddr is the address of the metrics' own listener, when open.
	metricsAddr net.Addr

	// draining is set as Close begins: /health answers 503 from then on.
	draining atomic.Bool

	mu      sync.Mutex
	started bool     // Start ran: a second one is refused
	closed  bool     // Close ran: a Start after it is refused
	stack   []closer // what Close stops, in reverse order
}

// closer stops one component; name says which in Close's errors.
type closer struct {
	name  string
	close func() error
}

// push puts a component's stop on the stack Close unwinds.
func (a *App) push(name string, f func() error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stack = append(a.stack, closer{name, f})
}

// pushFunc is push for a stop that cannot fail.
func (a *App) pushFunc(name string, f func()) {
	a.push(name, func() error { f(); return nil })
}

// New opens the database and builds every component. Its Handler serves
// requests at once, but nothing runs in the background except what waits
// for calls (the recorder's writer, the web sessions' idle sweep, the
// mailer, the plugins): Start runs the rest, and tests that drive the job
// queue and the checkpoints themselves leave it out. On an error New stops
// what it had started.
func New(ctx context.Context, o Options) (_ *App, err error) {
	cfg := *o.Config // DataDir changes the copy, never the caller's
	if o.DataDir != "" {
		cfg.DBPath = filepath.Join(o.DataDir, "svc.db")
		cfg.JournalDir = cfg.DBPath + ".runlog"
		cfg.LedgerKeyFile = filepath.Join(o.DataDir, "ledger.key")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Argon2 == (auth.Argon2Params{}) {
		o.Argon2 = auth.DefaultArgon2
	}
	if o.Files == nil {
		o.Files = webfiles.FS
	}
	if o.Provider != nil && o.Mailer == nil {
		return nil, errors.New("app: a stand-in Provider needs a stand-in Mailer")
	}
	a := &App{Config: &cfg, Logger: o.Logger, now: o.Now, failed: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	log, now := o.Logger, o.Now
	if cfg.Metrics {
		a.Metrics = metrics.New(metrics.Options{TenantLabel: cfg.MetricsTenantLabel, LabelLimit: cfg.MetricsLabelLimit, Version: version.Version})
	}
	m := a.Metrics

	// Tracing stops last, so that the spans of the shutdown are exported
	// too.
	traces, err := tracing.New(ctx, tracing.Options{On: cfg.Tracing, Version: version.Version, Logger: log.Named("tracing")})
	if err != nil {
		return nil, fmt.Errorf("tracing (OTEL_*): %w", err)
	}
	a.push("tracing", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return traces.Shutdown(ctx)
	})
	var spans trace.Tracer // nil: the request path traces nothing
	if traces.Enabled() {
		spans = traces.Tracer()
	}

	a.Store, err = store.OpenWith(ctx, cfg.DBPath, store.Options{MaxConns: cfg.DBMaxConns, StatementTimeout: cfg.DBStatementTimeout})
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", a.Config.DBAddress(), err)
	}
	a.push("database", a.Store.Close)
	ledgerKey, created, err := ledger.LoadOrCreateKey(cfg.LedgerKeyFile)
	if err != nil {
		return nil, fmt.Errorf("ledger key (SVC_LEDGER_KEY_FILE): %w", err)
	}
	if err := checkLedgerKey(ctx, a.Store, ledgerKey, created, cfg.LedgerKeyFile, log); err != nil {
		return nil, err
	}
	if created {
		log.Info("ledger signing key created: keep a copy of its public key (GET /api/v1/ledger/key) apart from svc",
			"path", cfg.LedgerKeyFile, "keyId", ledgerKey.ID)
	}

	guard := &netguard.Guard{Allow: cfg.WebAllowPrivate, Resolver: o.Resolver}
	settingsService := settings.NewService(a.Store, guard, nil)
	// The queue takes jobs from here on; its workers start last, once
	// everything their handlers use runs.
	shared := a.Store.Engine() == store.Postgres // other replicas may serve the database
	a.Jobs = jobs.New(a.Store, jobs.Options{Now: now, Logger: log.Named("jobs"), Metrics: m, Tracer: spans, Shared: shared})
	a.Jobs.Register(webhook.JobType, webhook.NewDeliverer(webhook.Options{
		Settings: settingsService, Guard: guard, Logger: log.Named("webhook"),
	}).Deliver)
	notifier := o.Notifier
	if notifier == nil {
		notifier = webhook.NewNotifier(a.Jobs, settingsService, log.Named("webhook"))
	}
	retention := ledger.NewRetention(a.Store, settingsService, nil)
	a.Jobs.Register(ledger.RetentionJob, func(ctx context.Context, j jobs.Job) error {
		n, err := retention.Sweep(ctx, j.TenantID)
		if n > 0 {
			log.Info("retention: runs deleted", "tenant", j.TenantID, "runs", n)
		}
		return err
	})

	prices, err := pricing.Load(cfg.PriceFile)
	if err != nil {
		return nil, fmt.Errorf("prices (SVC_PRICE_FILE): %w", err)
	}
	provider, mailer := o.Provider, o.Mailer
	var compiler pluginapi.PageCompiler
	external := false
	if provider == nil {
		host, err := plugins.Start(&cfg, log.Named("plugin"))
		if err != nil {
			return nil, err
		}
		a.pushFunc("plugins", host.Close)
		host.SetMetrics(m)
		provider, compiler, external = host.Provider(), host.Compiler(), host.External()
		if mailer == nil {
			m := email.NewMailer(host.Email(), cfg.EmailFrom, log.Named("email"))
			a.pushFunc("mailer", m.Close)
			mailer = m
		}
	}
	secrets := append([]string{cfg.ProviderAPIKey}, o.ProviderSecrets...)
	if cfg.ProvidersFile != "" {
		// Each instance's process starts now: a file that does not load, or
		// a plugin that does not start, stops svc with the file's words.
		opener := plugins.NewOpener(&cfg, log.Named("plugin"))
		opener.SetMetrics(m)
		a.providersFile, err = providers.Load(ctx, providers.ManagerOptions{
			Path: cfg.ProvidersFile, Opener: opener, Logger: log.Named("providers"), Now: now,
		})
		if err != nil {
			return nil, fmt.Errorf("providers (SVC_PROVIDERS_FILE):\n%w", err)
		}
		a.pushFunc("providers", a.providersFile.Close)
		a.Providers = a.providersFile.Router()
	} else {
		plugin := cfg.ProviderName()
		if cfg.ProviderPlugin != "" && o.Provider == nil {
			plugin = cfg.ProviderPlugin
		}
		set := providers.Single(cfg.ProviderName(), plugin, provider)
		if cfg.ProviderName() != "mock" {
			set.Providers[0].BaseURL = withoutCredentials(cfg.ProviderBaseURL)
		}
		a.Providers = providers.NewRouter(set, now)
	}
	a.Providers.SetMetrics(m)
	// The checkpointer stops after the recorder, so that its last
	// checkpoint covers the recorder's last runs; its stop goes on the
	// stack first but it is made only once the recorder holds the journal's
	// lock, so that an svc refused because another one serves this database
	// never signs checkpoints in it on the way out.
	a.pushFunc("checkpoints", func() {
		if a.Checkpoints != nil {
			a.Checkpoints.Close()
		}
	})
	// The runs the journal restores count in their tenants' zones, under
	// no replica of this process (it never counted them in memory).
	a.Store.SetSpend(settingsService, "")
	a.Recorder, err = ledger.NewRecorder(ctx, a.Store, cfg.JournalDir, log.Named("ledger"))
	if err != nil {
		return nil, fmt.Errorf("run journal (SVC_JOURNAL_DIR): %w", err)
	}
	a.Checkpoints = ledger.NewCheckpointer(ledger.CheckpointerOptions{
		Store: a.Store, Key: ledgerKey, Entries: cfg.LedgerCheckpointEntries, Interval: cfg.LedgerCheckpointInterval,
		Notifier: notifier, Logger: log.Named("ledger"), Now: now, Locker: a.Store,
	})
	a.pushFunc("recorder", a.Recorder.Close)
	a.Recorder.SetMetrics(m)
	recorder := a.Recorder
	// From here on the runs the store inserts are this process's, counted
	// in its tracker's memory: their counter rows carry its replica id,
	// which its reads leave out.
	replica := ids.New("rep")
	a.Store.SetSpend(settingsService, replica)
	a.Policies, err = policy.NewEngine(cfg.PolicyDir)
	if err != nil {
		return nil, fmt.Errorf("policies (SVC_POLICY_DIR):\n%w", err)
	}
	auditLog := audit.NewLog(a.Store, log.Named("audit"), nil)
	approvals := approval.NewService(a.Store, settingsService, now)
	budgets := spend.NewBudgets(spend.BudgetsOptions{Store: a.Store, Audit: auditLog, Now: now, Logger: log.Named("budgets")})
	// The tracker's windows are those of the runs' times, which are real
	// (see Options.Now), whatever clock the rest runs on.
	tracker := spend.NewTracker(spend.TrackerOptions{
		Store: a.Store, Zones: settingsService, Budgets: budgets, Replica: replica, Shared: shared,
		Sync: recorder.Sync, Notifier: notifier, Audit: auditLog, Logger: log.Named("spend"),
	})
	// The budgets' alerts of the last runs are sent before the database
	// and the job queue close: a threshold claimed is one told.
	a.pushFunc("budget alerts", tracker.Wait)
	governor := governance.New(governance.Options{
		Policies: a.Policies, Approvals: approvals, Audit: auditLog, Notifier: notifier, Agents: a.Store,
		Verdicts: a.Store, Budgets: budgets, Zones: settingsService, Logger: log.Named("policy"), Metrics: m,
	})
	a.Cache = cache.New(cache.Options{MaxBytes: cfg.CacheMaxBytes, TTL: cfg.CacheTTL, Negative: a.Store, Now: now, Metrics: a.Metrics})
	runs := ledger.NewService(a.Store, recorder, nil)
	a.Learning = learning.New(learning.Options{Store: a.Store, Runs: runs, Effects: a.Store, Syncer: recorder, Audit: auditLog,
		Notifier: notifier, Negative: a.Cache, AutoPromote: cfg.AutoPromote, Logger: log.Named("learning"), Now: now, Metrics: m})
	if err := a.Learning.Load(ctx); err != nil {
		return nil, fmt.Errorf("loading the promoted artifacts: %w", err)
	}
	a.Jobs.Register(learning.JobType, a.Learning.RunJob)
	gw := gateway.New(gateway.Options{
		Router: a.Providers, Recorder: recorder,
		Prices: prices, Governor: governor, Cache: a.Cache, Redaction: settingsService,
		Secrets: secrets, TraceContent: cfg.TraceContent,
		Learner: a.Learning, Canary: settingsService, Spend: tracker,
	})

	a.Keys = auth.NewKeys(a.Store, nil)
	secureCookies := strings.HasPrefix(cfg.AppBaseURL, "https://")
	a.Sessions, err = auth.NewSessionManager(ctx, a.Store, secureCookies, cfg.RequireLogin, now)
	if err != nil {
		return nil, err
	}
	forget, err := a.replicate(ctx, settingsService, budgets, governor, []accounts.Forgetter{a.Keys, a.Cache, a.Learning, recorder.Feed(), budgets, tracker})
	if err != nil {
		return nil, fmt.Errorf("following the other replicas: %w", err)
	}
	// Invitations, verifications and password resets send through the
	// mailer.
	a.Accounts = accounts.NewService(accounts.Options{
		Store: a.Store, Sessions: a.Sessions, Hasher: auth.NewHasher(o.Argon2), Mailer: mailer,
		Audit: auditLog, Logger: log.Named("accounts"), BaseURL: cfg.AppBaseURL, AllowSignup: cfg.AllowPublicSignup, Now: now,
		Forget: forget,
	})
	if cfg.AdminEmail != "" {
		if err := a.Accounts.Bootstrap(ctx, cfg.AdminEmail, cfg.AdminPassword); err != nil {
			return nil, fmt.Errorf("bootstrap admin (SVC_ADMIN_EMAIL, SVC_ADMIN_PASSWORD): %w", err)
		}
	}
	pages := browse.NewService(browse.ServiceOptions{
		Fetcher:     fetch.New(fetch.Options{Allow: cfg.WebAllowPrivate, Resolver: o.Resolver, Metrics: m}),
		OpenFetcher: fetch.New(fetch.Options{AllowPrivate: true, Resolver: o.Resolver, Metrics: m}),
		External:    compiler, Cache: a.Cache, Store: a.Store, Logger: log.Named("web"), Now: now, Metrics: m,
	})
	webSessions := browse.NewSessions(pages, a.Store, governor, auditLog)
	a.pushFunc("web sessions", webSessions.Close)
	a.devices = auth.NewDevices(a.Store, secureCookies, now)
	a.Auth = auth.NewAuthenticator(cfg.APIKey, a.Keys, a.Sessions)
	// Several replicas share a PostgreSQL database: their rate limits draw
	// on its buckets, so that a limit holds on a caller's total. One
	// process on SQLite keeps them in memory.
	var buckets ratelimit.Buckets
	if a.Store.Engine() == store.Postgres {
		buckets = a.Store
	}

	a.handler = httpapi.New(httpapi.Deps{
		Config:           &cfg,
		Logger:           log.Named("http"),
		Store:            a.Store,
		DBEngine:         a.Store.Engine().String(),
		Draining:         a.draining.Load,
		Auth:             a.Auth,
		Keys:             a.Keys,
		Accounts:         a.Accounts,
		Sessions:         a.Sessions,
		Devices:          a.devices,
		Settings:         settingsService,
		Audit:            auditLog,
		Gateway:          gw,
		Runs:             runs,
		DeletedResponses: a.Store,
		Feed:             recorder.Feed(),
		StreamPing:       o.StreamPing,
		Ledger:           a.Checkpoints,
		Governor:         governor,
		Reload:           a.ReloadPolicies,
		Providers:        a.Providers,
		ReloadProviders:  a.ReloadProviders,
		Tracer:           governance.NewTracer(runs, a.Store, governor),
		Approvals:        approvals,
		Budgets:          budgets,
		Spend:            tracker,
		Cache:            a.Cache,
		Jobs:             a.Jobs,
		Workflows:        workflows.NewService(a.Store, recorder, now),
		Learning:         a.Learning,
		SemanticWeb:      pages,
		WebSessions:      webSessions,
		Web:              o.Files,
		External:         external,
		Now:              now,
		Buckets:          buckets,
		Metrics:          m,
		Spans:            spans,
	}).Handler()
	a.readMetrics()
	return a, nil
}

// Handler is svc's HTTP handler, every middleware applied. It serves as
// soon as New returns.
func (a *App) Handler() http.Handler { return a.handler }

// Start runs what works in the background: the profiler when
// SVC_PPROF_ADDR asks for it, the metrics' own listener when
// SVC_METRICS_ADDR does, the ledger checkpoints, the learning flusher,
// then the job workers, last, since their handlers use everything else;
// then it opens the listener (SVC_ADDR), the daily sweeps and timed
// learning passes. It returns once the listener is open. On an error, Close
// stops what started. An App starts once, and never after Close.
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	refused := a.started || a.closed
	a.started = true
	a.mu.Unlock()
	if refused {
		return errors.New("svc was already started or closed")
	}
	cfg := a.Config
	// The profiler stays up until the workers have stopped, for a
	// shutdown that hangs.
	if cfg.PprofAddr != "" {
		a.servePprof(cfg.PprofAddr)
	}
	if cfg.MetricsAddr != "" {
		if err := a.serveMetrics(cfg.MetricsAddr); err != nil {
			return err
		}
	}
	a.Checkpoints.Start()
	a.Learning.Start()
	a.pushFunc("learning", a.Learning.Close) // stores the shadow evidence still pending
	// Start requeues the jobs a previous process left running before any
	// worker runs.
	if err := a.Jobs.Start(ctx); err != nil {
		return err
	}
	a.pushFunc("jobs", a.Jobs.Close)

	var err error
	a.listener, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SVC_ADDR): %w", cfg.Addr, err)
	}
	server := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       60 * time.Second,
		// No WriteTimeout: it would cut streamed completions. Handlers
		// bound their own work.
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       a.Logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	// Shutdown waits for requests to finish, and a live stream of runs
	// never does by itself: the feed's close ends them as shutdown begins.
	server.RegisterOnShutdown(a.Recorder.Feed().Close)
	go func() {
		if err := server.Serve(a.listener); !errors.Is(err, http.ErrServerClosed) {
			a.failed <- err
		}
	}()
	// Draining (Close set it): new connections are still accepted for
	// SVC_DRAIN_DELAY, /health answering 503, so that a load balancer takes
	// this replica out before its listener closes; kept-alive connections
	// close after their current request. Then in-flight requests finish, up
	// to SVC_SHUTDOWN_TIMEOUT.
	a.push("http", func() error {
		server.SetKeepAlivesEnabled(false)
		if cfg.DrainDelay > 0 {
			a.Logger.Info("draining", "delay", cfg.DrainDelay)
			time.Sleep(cfg.DrainDelay)
		}
		a.Logger.Info("shutting down", "timeout", cfg.ShutdownTimeout)
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return server.Shutdown(ctx)
	})

	a.startTimers()
	providerKV := []any{"provider", cfg.ProviderName()}
	if a.providersFile != nil {
		providerKV = []any{"providers", strings.Join(providers.Names(a.Providers.Current()), ",")}
	}
	a.Logger.Info("listening", append(append([]any{"addr", a.listener.Addr().String(), "version", version.Version},
		providerKV...), "auth", a.Auth.Access(ctx).Describe(), "db", a.Store.Path())...)
	return nil
}

// ReloadProviders loads SVC_PROVIDERS_FILE again: on SIGHUP, and for POST
// /api/v1/providers/reload. A file that does not load leaves the last good
// set serving; the log, the error and the status say why. Without a file
// there is nothing to reload, and the status is returned as it is.
func (a *App) ReloadProviders(ctx context.Context) (providers.Status, error) {
	if a.providersFile == nil {
		return a.Providers.Status(), nil
	}
	err := a.providersFile.Reload(ctx)
	return a.Providers.Status(), err
}

// ReloadPolicies loads SVC_POLICY_DIR again: on SIGHUP, and for POST
// /api/v1/policies/reload. A folder that does not load leaves the rules in
// force, and the log and the error say why; the status is the policies'
// from then on (GET /api/v1/policies shows it).
func (a *App) ReloadPolicies() (policy.Status, error) {
	st, err := a.Policies.Reload()
	if err != nil {
		a.Logger.Error("policy reload refused; the previous rules stay in force", "error", err)
		return st, err
	}
	a.Logger.Info("policies reloaded", "rules", st.Rules)
	return st, nil
}

// Failed delivers an error when the server stops on its own.
func (a *App) Failed() <-chan error { return a.failed }

// Addr is the address the server listens on, once started.
func (a *App) Addr() string { return a.listener.Addr().String() }

// Close stops in reverse order of start: the timers, the HTTP server (which
// ends the live streams of runs and lets in-flight requests finish), the
// job workers (which finish the attempts they run; queued jobs wait for the
// next start), the learning flusher (which stores the pending shadow
// evidence), the profiler, the web sessions, the recorder (which ends the
// live streams of runs no server ended and stores what is journaled), the
// checkpointer (whose last checkpoint covers it), the mailer, the plugins,
// the database, then the tracer, which exports the spans it still holds. A
// second Close does nothing. /health answers 503 (draining) from the moment
// Close begins.
func (a *App) Close() error {
	a.draining.Store(true)
	a.mu.Lock()
	a.closed = true
	stack := a.stack
	a.stack = nil
	a.mu.Unlock()
	var errList []error
	served := false
	for i := len(stack) - 1; i >= 0; i-- {
		c := stack[i]
		served = served || c.name == "http"
		if err := c.close(); err != nil {
			errList = append(errList, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	if served {
		a.Logger.Info("stopped")
	}
	return errors.Join(errList...)
}

// withoutCredentials is a URL as the providers' status may show it: any
// user and password, query and fragment it holds left out (a key may
// travel in any of them; a providers file refuses all three).
func withoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
