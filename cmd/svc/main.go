// Command svc is the policy-aware model gateway: an OpenAI-compatible
// chat-completions endpoint that records, prices, governs and learns from
// every call, with a management API and a dashboard.
//
// Configuration comes from the environment; see the README for every
// variable and its default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

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
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/version"
	"github.com/svc-gateway/svc/internal/webhook"
	"github.com/svc-gateway/svc/internal/workflows"
	"github.com/svc-gateway/svc/pkg/netguard"
	webfiles "github.com/svc-gateway/svc/web"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verifyMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Usage = usage
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Backstop: plugin processes never outlive svc, even on a failed start.
	defer plugin.CleanupClients()

	m := NewMain()
	if err := m.Run(ctx, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
		_ = m.Close()
		plugin.CleanupClients()
		os.Exit(1)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
wait:
	for {
		select {
		case <-hup:
			m.ReloadPolicies()
		case <-ctx.Done():
			break wait
		case err := <-m.Failed():
			m.Logger.Error("server stopped", "error", err)
			break wait
		}
	}
	stop()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "svc: shutdown:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: svc [-version]\n       svc verify -db <file> -public-key <key> [-checkpoints <file>]   (see svc verify -h)\n\n"+
		"svc is configured through the environment:\n\n")
	for _, v := range config.Vars {
		fmt.Fprintf(os.Stderr, "  %-24s %s (default: %s)\n", v.Name, v.Purpose, v.Default)
	}
}

// Main is one running svc: it exists apart from main so that Run and Close
// can be driven by tests.
type Main struct {
	Config   *config.Config
	Logger   hclog.Logger
	Store    *store.Store
	Policies *policy.Engine
	Mailer   *email.Mailer
	Accounts *accounts.Service

	// Jobs is the persistent job queue; its workers run from Run to Close.
	Jobs *jobs.Queue
	// Webhooks queues signed deliveries of a tenant's notable events to its
	// webhook_url: pass it to whatever reports events and call Notify.
	Webhooks *webhook.Notifier
	// Learning runs the learning loop: passes, gates, the serving index.
	Learning *learning.Service

	plugins     *plugins.Host
	webSessions *browse.Sessions
	devices     *auth.Devices
	recorder    *ledger.Recorder
	checkpoints *ledger.Checkpointer
	server      *http.Server
	listener    net.Listener
	failed      chan error

	learner    atomic.Pointer[learning.Service] // Learning, for the job handler registered before it exists
	stopTimers chan struct{}                    // closed by Close: stops the daily sweeps and the learning timer
	timers     sync.WaitGroup
}

// NewMain returns a Main that is not started.
func NewMain() *Main {
	return &Main{failed: make(chan error, 1)}
}

// Run reads the configuration through getenv, opens the database and starts
// serving. It returns once the listener is open.
func (m *Main) Run(ctx context.Context, getenv func(string) string) error {
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	m.Config = cfg
	m.Logger = hclog.New(&hclog.LoggerOptions{
		Name:       "svc",
		Level:      cfg.LogLevel,
		JSONFormat: cfg.LogJSON,
		Output:     os.Stderr,
	})

	m.Store, err = store.Open(ctx, cfg.DBPath)
	if err != nil {
		return fmt.Errorf("database %s: %w", cfg.DBPath, err)
	}
	ledgerKey, created, err := ledger.LoadOrCreateKey(cfg.LedgerKeyFile)
	if err != nil {
		return fmt.Errorf("ledger key (SVC_LEDGER_KEY_FILE): %w", err)
	}
	if created {
		m.Logger.Info("ledger signing key created: keep a copy of its public key (GET /api/v1/ledger/key) apart from svc",
			"path", cfg.LedgerKeyFile, "keyId", ledgerKey.ID)
	}

	guard := &netguard.Guard{Allow: cfg.WebAllowPrivate}
	settingsService := settings.NewService(m.Store, guard, nil)
	// The queue starts before anything that reports events, and requeues
	// the jobs a previous process left running.
	m.Jobs = jobs.New(m.Store, jobs.Options{Logger: m.Logger.Named("jobs")})
	m.Jobs.Register(webhook.JobType, webhook.NewDeliverer(webhook.Options{
		Settings: settingsService, Guard: guard, Logger: m.Logger.Named("webhook"),
	}).Deliver)
	m.Webhooks = webhook.NewNotifier(m.Jobs, settingsService, m.Logger.Named("webhook"))
	retention := ledger.NewRetention(m.Store, settingsService, nil)
	m.Jobs.Register(ledger.RetentionJob, func(ctx context.Context, j jobs.Job) error {
		n, err := retention.Sweep(ctx, j.TenantID)
		if n > 0 {
			m.Logger.Info("retention: runs deleted", "tenant", j.TenantID, "runs", n)
		}
		return err
	})
	// A learning pass job recovered at start waits for the learning loop,
	// which needs the recorder and the caches made below.
	m.Jobs.Register(learning.JobType, func(ctx context.Context, j jobs.Job) error {
		l := m.learner.Load()
		if l == nil {
			return errors.New("the learning loop is not started yet")
		}
		return l.RunJob(ctx, j)
	})
	if err := m.Jobs.Start(ctx); err != nil {
		return err
	}

	prices, err := pricing.Load(cfg.PriceFile)
	if err != nil {
		return fmt.Errorf("prices (SVC_PRICE_FILE): %w", err)
	}
	m.plugins, err = plugins.Start(cfg, m.Logger.Named("plugin"))
	if err != nil {
		return err
	}
	// Invitations, verifications and password resets (the accounts
	// capability) send through the mailer.
	m.Mailer = email.NewMailer(m.plugins.Email(), cfg.EmailFrom, m.Logger.Named("email"))
	m.recorder, err = ledger.NewRecorder(ctx, m.Store, cfg.DBPath+".runlog", m.Logger.Named("ledger"))
	if err != nil {
		return err
	}
	// Signs checkpoints of the ledger's entries as runs are stored; its
	// Close, after the recorder's, covers the last of them.
	m.checkpoints = ledger.NewCheckpointer(ledger.CheckpointerOptions{
		Store: m.Store, Key: ledgerKey, Entries: cfg.LedgerCheckpointEntries, Interval: cfg.LedgerCheckpointInterval,
		Notifier: m.Webhooks, Logger: m.Logger.Named("ledger"),
	})
	m.checkpoints.Start()
	m.Policies, err = policy.NewEngine(cfg.PolicyDir)
	if err != nil {
		return fmt.Errorf("policies (SVC_POLICY_DIR):\n%w", err)
	}
	auditLog := audit.NewLog(m.Store, m.Logger.Named("audit"), nil)
	approvals := approval.NewService(m.Store, settingsService, nil)
	governor := governance.New(governance.Options{
		Policies: m.Policies, Approvals: approvals, Audit: auditLog, Notifier: m.Webhooks, Agents: m.Store,
		Logger: m.Logger.Named("policy"),
	})
	caches := cache.New(cache.Options{MaxBytes: cfg.CacheMaxBytes, TTL: cfg.CacheTTL, Negative: m.Store})
	runs := ledger.NewService(m.Store, m.recorder, nil)
	m.Learning = learning.New(learning.Options{Store: m.Store, Runs: runs, Effects: m.Store, Syncer: m.recorder, Audit: auditLog,
		Notifier: m.Webhooks, Negative: caches, AutoPromote: cfg.AutoPromote, Logger: m.Logger.Named("learning")})
	if err := m.Learning.Load(ctx); err != nil {
		return fmt.Errorf("loading the promoted artifacts: %w", err)
	}
	m.Learning.Start()
	m.learner.Store(m.Learning)
	gw := gateway.New(gateway.Options{
		Provider: m.plugins.Provider(), ProviderName: cfg.ProviderName(), Recorder: m.recorder,
		Prices: prices, Governor: governor, Cache: caches, Redaction: settingsService, Secrets: []string{cfg.ProviderAPIKey},
		Learner: m.Learning, Canary: settingsService,
	})

	keys := auth.NewKeys(m.Store, nil)
	secureCookies := strings.HasPrefix(cfg.AppBaseURL, "https://")
	sessions, err := auth.NewSessionManager(ctx, m.Store, secureCookies, cfg.RequireLogin, nil)
	if err != nil {
		return err
	}
	m.Accounts = accounts.NewService(accounts.Options{
		Store: m.Store, Sessions: sessions, Hasher: auth.NewHasher(auth.DefaultArgon2), Mailer: m.Mailer,
		Audit: auditLog, Logger: m.Logger.Named("accounts"), BaseURL: cfg.AppBaseURL, AllowSignup: cfg.AllowPublicSignup,
	})
	if cfg.AdminEmail != "" {
		if err := m.Accounts.Bootstrap(ctx, cfg.AdminEmail, cfg.AdminPassword); err != nil {
			return fmt.Errorf("bootstrap admin (SVC_ADMIN_EMAIL, SVC_ADMIN_PASSWORD): %w", err)
		}
	}
	pages := browse.NewService(browse.ServiceOptions{
		Fetcher:     fetch.New(fetch.Options{Allow: cfg.WebAllowPrivate}),
		OpenFetcher: fetch.New(fetch.Options{AllowPrivate: true}),
		External:    m.plugins.Compiler(), Cache: caches, Store: m.Store, Logger: m.Logger.Named("web"),
	})
	m.webSessions = browse.NewSessions(pages, governor, auditLog)
	m.devices = auth.NewDevices(m.Store, secureCookies, nil)
	m.stopTimers = make(chan struct{})
	m.timers.Go(m.sweepDaily)
	if cfg.LearningInterval > 0 {
		m.timers.Go(m.learnEvery)
	}
	api := httpapi.New(httpapi.Deps{
		Config:      cfg,
		Logger:      m.Logger.Named("http"),
		Store:       m.Store,
		Auth:        auth.NewAuthenticator(cfg.APIKey, keys, sessions),
		Keys:        keys,
		Accounts:    m.Accounts,
		Sessions:    sessions,
		Devices:     m.devices,
		Settings:    settingsService,
		Audit:       auditLog,
		Gateway:     gw,
		Runs:        runs,
		Ledger:      m.checkpoints,
		Governor:    governor,
		Tracer:      governance.NewTracer(runs, m.Store, governor),
		Approvals:   approvals,
		Cache:       caches,
		Jobs:        m.Jobs,
		Workflows:   workflows.NewService(m.Store, m.recorder, nil),
		Learning:    m.Learning,
		Webhooks:    m.Webhooks,
		SemanticWeb: pages,
		WebSessions: m.webSessions,
		Web:         webfiles.FS,
		External:    m.plugins.External(),
	})

	m.listener, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SVC_ADDR): %w", cfg.Addr, err)
	}
	m.server = &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       60 * time.Second,
		// No WriteTimeout: it would cut streamed completions. Handlers
		// bound their own work.
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       m.Logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() {
		if err := m.server.Serve(m.listener); !errors.Is(err, http.ErrServerClosed) {
			m.failed <- err
		}
	}()

	if cfg.PprofAddr != "" {
		m.servePprof(cfg.PprofAddr)
	}
	mode := "bearer"
	if cfg.OpenDevMode() {
		mode = "open dev mode: headerless requests are admin of the default tenant"
	}
	m.Logger.Info("listening", "addr", m.listener.Addr().String(), "version", version.Version,
		"provider", cfg.ProviderName(), "auth", mode, "db", cfg.DBPath)
	return nil
}

// servePprof serves Go's profiler on its own listener, apart from the API.
func (m *Main) servePprof(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil {
			m.Logger.Error("profiler stopped", "addr", addr, "error", err)
		}
	}()
	m.Logger.Warn("Go profiler served without authentication", "addr", addr)
}

// sweepDaily expires invites and sign-in devices and queues a retention
// sweep of every tenant a minute after the start and then once a day, until
// Close.
func (m *Main) sweepDaily() {
	wait := time.Minute
	for {
		select {
		case <-m.stopTimers:
			return
		case <-time.After(wait):
		}
		wait = 24 * time.Hour
		ctx := context.Background()
		if n, err := m.Accounts.ExpireInvites(ctx); err != nil {
			m.Logger.Error("marking expired invites failed", "error", err)
		} else if n > 0 {
			m.Logger.Info("invites expired", "invites", n)
		}
		if n, err := m.devices.Expire(ctx); err != nil {
			m.Logger.Error("forgetting expired sign-in devices failed", "error", err)
		} else if n > 0 {
			m.Logger.Info("sign-in devices expired", "devices", n)
		}
		tenants, err := m.Store.TenantIDs(ctx)
		if err != nil {
			m.Logger.Error("retention: listing tenants failed", "error", err)
			continue
		}
		for _, id := range tenants {
			if _, err := m.Jobs.Enqueue(ctx, id, ledger.RetentionJob, map[string]any{}); err != nil {
				m.Logger.Error("retention: queueing a sweep failed", "tenant", id, "error", err)
			}
		}
	}
}

// learnEvery queues a learning pass of every tenant each
// SVC_LEARNING_INTERVAL, until Close. A tenant whose previous pass is still
// queued is not queued again.
func (m *Main) learnEvery() {
	tick := time.NewTicker(m.Config.LearningInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.stopTimers:
			return
		case <-tick.C:
		}
		ctx := context.Background()
		tenants, err := m.Store.TenantIDs(ctx)
		if err != nil {
			m.Logger.Error("learning: listing tenants failed", "error", err)
			continue
		}
		for _, id := range tenants {
			if l, err := m.Jobs.List(ctx, id, jobs.Filter{Status: jobs.Queued, Limit: jobs.MaxLimit}); err == nil && queuedPass(l.Jobs) {
				continue
			}
			if _, err := m.Jobs.Enqueue(ctx, id, learning.JobType, learning.JobPayload{Trigger: learning.TriggerTimer}); err != nil {
				m.Logger.Error("learning: queueing a pass failed", "tenant", id, "error", err)
			}
		}
	}
}

func queuedPass(js []jobs.Job) bool {
	for _, j := range js {
		if j.Type == learning.JobType {
			return true
		}
	}
	return false
}

// ReloadPolicies loads SVC_POLICY_DIR again. A folder that does not load
// leaves the rules in force, and the log says why.
func (m *Main) ReloadPolicies() {
	if err := m.Policies.Reload(); err != nil {
		m.Logger.Error("policy reload refused; the previous rules stay in force", "error", err)
		return
	}
	m.Logger.Info("policies reloaded", "rules", len(m.Policies.Set().Rules()))
}

// Failed delivers an error when the server stops on its own.
func (m *Main) Failed() <-chan error { return m.failed }

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.listener.Addr().String() }

// Close stops in reverse order of start: the HTTP server lets in-flight
// requests finish (up to SVC_SHUTDOWN_TIMEOUT), the job workers finish the
// attempts they are running (queued jobs wait for the next start), the
// recorder writes what is queued, a last ledger checkpoint covers it, the
// plugins are killed, then the database closes.
func (m *Main) Close() error {
	var errList []error
	if m.stopTimers != nil {
		close(m.stopTimers)
		m.timers.Wait()
	}
	if m.server != nil {
		m.Logger.Info("shutting down", "timeout", m.Config.ShutdownTimeout)
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
		defer cancel()
		if err := m.server.Shutdown(ctx); err != nil {
			errList = append(errList, fmt.Errorf("http: %w", err))
		}
	}
	if m.Jobs != nil {
		m.Jobs.Close()
	}
	if m.Learning != nil {
		m.Learning.Close() // stores the shadow evidence still pending
	}
	if m.webSessions != nil {
		m.webSessions.Close()
	}
	if m.recorder != nil {
		m.recorder.Close()
	}
	if m.checkpoints != nil {
		m.checkpoints.Close() // seals the runs the recorder just stored
	}
	if m.Mailer != nil {
		m.Mailer.Close()
	}
	if m.plugins != nil {
		m.plugins.Close()
	}
	if m.Store != nil {
		if err := m.Store.Close(); err != nil {
			errList = append(errList, fmt.Errorf("database: %w", err))
		}
	}
	if m.Logger != nil && m.server != nil {
		m.Logger.Info("stopped")
	}
	return errors.Join(errList...)
}
