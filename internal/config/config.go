// Package config reads the service's settings from the environment, once, into
// one Config value. A bad value stops the start with a message that names the
// variable, so an operator never runs with a setting silently ignored.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"

	"github.com/svc-gateway/svc/pkg/netguard"
)

// Config is every setting of one svc process.
type Config struct {
	Addr   string // SVC_ADDR: listen address
	DBPath string // SVC_DB: SQLite file, or a postgres:// (postgresql://) address

	// DBMaxConns bounds a PostgreSQL store's connections (SVC_DB_MAX_CONNS).
	DBMaxConns int
	// DBStatementTimeout ends a PostgreSQL statement that runs longer
	// (SVC_DB_STATEMENT_TIMEOUT).
	DBStatementTimeout time.Duration
	// DBRefresh bounds how long a replica's in-memory copy of shared state
	// (keys, sessions, settings, promoted artifacts) may lag a change whose
	// notification it missed (SVC_DB_REFRESH; PostgreSQL only).
	DBRefresh time.Duration
	// JournalDir is this process's run journal folder (SVC_JOURNAL_DIR):
	// beside the SQLite file by default, ./data/journal with PostgreSQL.
	// Replicas sharing a machine each need their own.
	JournalDir string

	// APIKey is the bootstrap bearer token (SVC_API_KEY). Empty means open dev
	// mode: headerless requests act as admin of the default tenant.
	APIKey string

	PluginDir      string // SVC_PLUGIN_DIR
	ProviderPlugin string // SVC_PROVIDER_PLUGIN: a binary for the provider slot
	EmailPlugin    string // SVC_EMAIL_PLUGIN
	SOMPlugin      string // SVC_SOM_PLUGIN

	ProviderAPIKey  string // PROVIDER_API_KEY: set means the live provider
	ProviderBaseURL string // PROVIDER_BASE_URL
	// ProvidersFile declares several provider instances and their routes
	// (SVC_PROVIDERS_FILE); set, it replaces the provider variables above.
	ProvidersFile string

	PriceFile string // SVC_PRICE_FILE: per-model prices laid over the built-in table
	PprofAddr string // SVC_PPROF_ADDR: where to serve Go's profiler, for operators measuring svc

	// Metrics turns the Prometheus metrics on (SVC_METRICS, default on):
	// GET /metrics on the main listener behind an admin credential, and on
	// MetricsAddr (SVC_METRICS_ADDR) without one when that is set.
	Metrics     bool
	MetricsAddr string
	// MetricsTenantLabel adds a tenant label to the gateway's metrics
	// (SVC_METRICS_TENANT_LABEL); MetricsLabelLimit bounds the distinct
	// values of a free-form label (app, model, tenant, rule id) before the
	// rest count as "other" (SVC_METRICS_LABEL_LIMIT).
	MetricsTenantLabel bool
	MetricsLabelLimit  int
	// TraceContent records prompts and answers on the gateway's spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), masked when the
	// tenant has redaction on. The exporter itself is configured by the
	// standard OTEL_* variables, which the tracing package reads.
	TraceContent bool
	// Tracing is on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT
	// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and neither OTEL_SDK_DISABLED
	// nor OTEL_TRACES_EXPORTER=none turns it off.
	Tracing bool
	// TrustedProxies are the reverse proxies (SVC_TRUSTED_PROXIES) whose
	// X-Forwarded-For names the client the per-address limits count.
	TrustedProxies   []netip.Prefix
	PolicyDir        string        // SVC_POLICY_DIR
	LearningInterval time.Duration // SVC_LEARNING_INTERVAL; 0 turns the timer off
	AutoPromote      bool          // SVC_AUTO_PROMOTE

	LogLevel hclog.Level // SVC_LOG_LEVEL
	LogJSON  bool        // SVC_LOG_JSON

	// LedgerKeyFile is the ledger's Ed25519 signing key (SVC_LEDGER_KEY_FILE),
	// created at the first start; by default ledger.key beside the database.
	LedgerKeyFile string
	// LedgerCheckpointEntries and LedgerCheckpointInterval say when a
	// ledger checkpoint is signed: once that many entries wait, or once the
	// oldest has waited that long.
	LedgerCheckpointEntries  int           // SVC_LEDGER_CHECKPOINT_RUNS
	LedgerCheckpointInterval time.Duration // SVC_LEDGER_CHECKPOINT_INTERVAL

	CacheTTL      time.Duration // SVC_CACHE_TTL
	CacheMaxBytes int64         // SVC_CACHE_MAX_BYTES

	// WebAllowPrivate lists the internal destinations an operator opened
	// (SVC_WEB_ALLOW_PRIVATE), exempt from the private-address guard.
	WebAllowPrivate netguard.Allowlist

	RateLimit       int           // SVC_RATE_LIMIT: /api/v1 requests per minute per caller; 0 is off
	MaxBodyBytes    int64         // SVC_MAX_BODY_BYTES: request body limit
	ShutdownTimeout time.Duration // SVC_SHUTDOWN_TIMEOUT: how long in-flight requests may finish
	// DrainDelay (SVC_DRAIN_DELAY) is how long a stopping svc keeps its
	// listener open with /health at 503 before it closes it, so that a load
	// balancer's health check sees it draining rather than gone.
	DrainDelay time.Duration

	AdminEmail        string // SVC_ADMIN_EMAIL
	AdminPassword     string // SVC_ADMIN_PASSWORD
	RequireLogin      bool   // SVC_REQUIRE_LOGIN
	AllowPublicSignup bool   // SVC_ALLOW_PUBLIC_SIGNUP
	AppBaseURL        string // SVC_APP_BASE_URL: base of accept and verify links
	EmailProviderKey  string // EMAIL_PROVIDER_API_KEY
	EmailProviderURL  string // EMAIL_PROVIDER_URL
	EmailFrom         string // SVC_EMAIL_FROM
	SMTPHost          string // SMTP_HOST
	SMTPPort          int    // SMTP_PORT
	SMTPUsername      string // SMTP_USERNAME
	SMTPPassword      string // SMTP_PASSWORD
	SMTPTLS           string // SMTP_TLS: starttls, tls or none
	MockLatencyMS     int    // MOCK_LATENCY_MS, passed to the mock provider
	PluginProcs       int    // SVC_PLUGIN_GOMAXPROCS; 0 for the default (see PluginGOMAXPROCS)
	ExecutableDir     string // folder of the running binary, for default paths
}

// OpenDevMode reports whether no bootstrap token is configured. Account mode
// (users, or SVC_REQUIRE_LOGIN) may still require a sign-in for the
// management API: auth.Authenticator.Access says which mode svc is in.
func (c *Config) OpenDevMode() bool { return c.APIKey == "" }

// PluginGOMAXPROCS is the GOMAXPROCS each plugin process runs with: the
// operator's SVC_PLUGIN_GOMAXPROCS, or a quarter of the machine's CPUs (at
// least one). A plugin relays bytes between svc and a service; with a
// runtime as wide as the machine, each of its many goroutine hand-offs wakes
// an idle thread on another CPU, which on a small virtual machine costs more
// CPU than the relaying itself and adds latency (measured with make bench).
func (c *Config) PluginGOMAXPROCS() int {
	if c.PluginProcs > 0 {
		return c.PluginProcs
	}
	return max(1, runtime.NumCPU()/4)
}

// ProviderName is "openai" when a live provider key is set, otherwise "mock".
func (c *Config) ProviderName() string {
	if c.ProviderAPIKey != "" {
		return "openai"
	}
	return "mock"
}

// Postgres reports whether SVC_DB names a PostgreSQL database.
func (c *Config) Postgres() bool { return IsPostgres(c.DBPath) }

// IsPostgres reports whether dsn, a value of SVC_DB, names a PostgreSQL
// database; any other value is an SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// DBAddress is SVC_DB as logs may show it: a PostgreSQL address without
// its password.
func (c *Config) DBAddress() string {
	if !c.Postgres() {
		return c.DBPath
	}
	return RedactDBAddress(c.DBPath)
}

// RedactDBAddress is the PostgreSQL address dsn as logs and /health may
// show it: without the password of its user information, nor the password
// and sslpassword parameters libpq also reads from its query.
func RedactDBAddress(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres"
	}
	q := u.Query()
	changed := false
	for _, name := range []string{"password", "sslpassword"} {
		if q.Has(name) {
			q.Set(name, "xxxxx")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Vars lists every variable FromEnv reads, with its default, for the
// configuration table in docs/operations.md and for --help.
var Vars = []struct{ Name, Default, Purpose string }{
	{"SVC_ADDR", ":4100", "listen address"},
	{"SVC_DB", "./data/svc.db", "SQLite database file (folder created when missing), or a PostgreSQL address postgres://user:password@host:5432/db?sslmode=verify-full shared by several replicas"},
	{"SVC_DB_MAX_CONNS", "20", "PostgreSQL: most connections one replica opens for its queries (it also keeps a pool of half as many, at least 4, for its locks, and one connection that listens for the other replicas' changes)"},
	{"SVC_DB_STATEMENT_TIMEOUT", "30s", "PostgreSQL: longest a statement may run (Go duration)"},
	{"SVC_DB_REFRESH", "5s", "PostgreSQL: longest a replica's cached keys, sessions, settings and artifacts may lag a change whose notification it missed (Go duration)"},
	{"SVC_JOURNAL_DIR", "SQLite: the file's name + .runlog; PostgreSQL: ./data/journal", "this process's run journal folder; replicas sharing a machine need one each"},
	{"SVC_API_KEY", "unset (open dev mode)", "bootstrap bearer token, admin of the default tenant; at least 16 characters"},
	{"SVC_PLUGIN_DIR", "plugins/ beside the svc binary", "folder of plugin binaries"},
	{"SVC_PROVIDER_PLUGIN", "unset", "binary for the provider slot"},
	{"SVC_EMAIL_PLUGIN", "unset", "binary for the email slot"},
	{"SVC_SOM_PLUGIN", "unset", "binary for the external page compiler"},
	{"PROVIDER_API_KEY", "unset (mock provider)", "key of the live OpenAI-compatible provider"},
	{"PROVIDER_BASE_URL", "https://api.openai.com/v1", "base URL of the live provider"},
	{"SVC_PROVIDERS_FILE", "unset (one provider from the variables above)", "YAML or JSON file of provider instances, routes, retries and circuit breakers (docs/providers.md); reloaded on SIGHUP"},
	{"MOCK_LATENCY_MS", "0", "fixed latency of the mock provider, for benchmarks"},
	{"SVC_PLUGIN_GOMAXPROCS", "a quarter of the CPUs, at least 1", "GOMAXPROCS of each plugin process (a plugin mostly relays bytes; a small runtime wastes less CPU waking idle threads)"},
	{"SVC_TRUSTED_PROXIES", "unset", "comma-separated IPs or CIDRs of reverse proxies in front of svc: their X-Forwarded-For names the client for per-address limits"},
	{"SVC_PPROF_ADDR", "unset (off)", "serve Go's net/http/pprof profiler on this address (keep it on loopback: it is unauthenticated)"},
	{"SVC_METRICS", "on", "Prometheus metrics at GET /metrics (admin credential); off turns every metric off"},
	{"SVC_METRICS_ADDR", "unset", "also serve GET /metrics on this address, without a credential (for a scraper inside a private network)"},
	{"SVC_METRICS_TENANT_LABEL", "false", "add a tenant label to the gateway's metrics"},
	{"SVC_METRICS_LABEL_LIMIT", "50", "distinct values a free-form metric label (app, model, tenant, rule) may take; the rest count as other"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "unset (tracing off)", "export OpenTelemetry traces over OTLP to this endpoint (also OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _PROTOCOL grpc or http/protobuf, _HEADERS, _TIMEOUT, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_SDK_DISABLED)"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "unset", "the traces' OTLP endpoint, when it differs from OTEL_EXPORTER_OTLP_ENDPOINT"},
	{"OTEL_SDK_DISABLED", "false", "true turns tracing off whatever the endpoint"},
	{"OTEL_TRACES_EXPORTER", "otlp", "a comma-separated list: traces are exported only when it names otlp (none, or a list without otlp, turns tracing off whatever the endpoint)"},
	{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false", "record prompts and answers on the gateway's spans (masked when the tenant has redaction on)"},
	{"SVC_PRICE_FILE", "unset (built-in prices)", "JSON file of per-model prices in USD per million tokens, {\"model\": {\"input\": 0.15, \"output\": 0.6}} (and cached_input, cache_write for the prompt cache's tokens), laid over the built-in table"},
	{"SVC_POLICY_DIR", "unset (no policies)", "folder of CEL policy files (*.yaml, *.yml, *.json)"},
	{"SVC_LEARNING_INTERVAL", "5m", "learning timer (Go duration; 0 turns it off)"},
	{"SVC_AUTO_PROMOTE", "false", "promote artifacts that pass the gates without an operator"},
	{"SVC_LOG_LEVEL", "info", "trace, debug, info, warn or error"},
	{"SVC_LOG_JSON", "false", "log as JSON lines"},
	{"SVC_LEDGER_KEY_FILE", "ledger.key beside SVC_DB (./data/ledger.key with PostgreSQL)", "Ed25519 key that signs the run ledger's checkpoints, created (mode 0600) when missing; keep it off the database's disk and backups"},
	{"SVC_LEDGER_CHECKPOINT_RUNS", "1000", "sign a ledger checkpoint once this many ledger entries (runs stored, traced events, retention sweeps) wait"},
	{"SVC_LEDGER_CHECKPOINT_INTERVAL", "1m", "sign a ledger checkpoint once the oldest waiting entry is this old (Go duration)"},
	{"SVC_CACHE_TTL", "1h", "lifetime of exact-cache entries (Go duration)"},
	{"SVC_CACHE_MAX_BYTES", "4194304", "memory bound of the in-memory cache tiers (exact responses, tool results, SOM pages), in bytes"},
	{"SVC_WEB_ALLOW_PRIVATE", "unset", "comma-separated host:port or CIDR exempt from the private-address guard"},
	{"SVC_RATE_LIMIT", "1200", "/api/v1 requests per minute per caller (burst a tenth of it); 0 turns it off"},
	{"SVC_MAX_BODY_BYTES", "8388608", "largest request body accepted (8 MiB: a 4 MiB prompt with its JSON around it)"},
	{"SVC_SHUTDOWN_TIMEOUT", "30s", "how long in-flight requests may finish on SIGTERM"},
	{"SVC_DRAIN_DELAY", "0s", "on SIGTERM, how long svc keeps accepting requests with /health at 503 (draining) before it closes its listener: a little more than the load balancer's health-check interval"},
	{"SVC_ADMIN_EMAIL", "unset", "bootstrap admin account's email"},
	{"SVC_ADMIN_PASSWORD", "unset", "bootstrap admin account's first password"},
	{"SVC_REQUIRE_LOGIN", "false", "require login even before the first user exists"},
	{"SVC_ALLOW_PUBLIC_SIGNUP", "false", "open self-serve signup with email verification"},
	{"SVC_APP_BASE_URL", "http://localhost:4100", "base URL of invite, verify and reset links"},
	{"EMAIL_PROVIDER_API_KEY", "unset (console transport)", "send email through the provider"},
	{"EMAIL_PROVIDER_URL", "https://api.resend.com/emails", "the email provider's send endpoint"},
	{"SVC_EMAIL_FROM", "svc <no-reply@localhost>", "sender identity"},
	{"SMTP_HOST", "unset", "SMTP server of the email-smtp plugin"},
	{"SMTP_PORT", "587", "SMTP port"},
	{"SMTP_USERNAME", "unset", "SMTP user"},
	{"SMTP_PASSWORD", "unset", "SMTP password"},
	{"SMTP_TLS", "starttls", "starttls, tls or none"},
}

// FromEnv reads the configuration through getenv (os.Getenv in production).
// Every bad value is reported, each naming its variable.
func FromEnv(getenv func(string) string) (*Config, error) {
	p := parser{getenv: getenv}
	c := &Config{
		Addr:                     p.addr("SVC_ADDR", ":4100"),
		DBPath:                   p.str("SVC_DB", "./data/svc.db"),
		DBMaxConns:               p.intRange("SVC_DB_MAX_CONNS", 20, 1, 10000),
		DBStatementTimeout:       p.duration("SVC_DB_STATEMENT_TIMEOUT", 30*time.Second),
		DBRefresh:                p.duration("SVC_DB_REFRESH", 5*time.Second),
		JournalDir:               p.str("SVC_JOURNAL_DIR", ""),
		APIKey:                   p.apiKey("SVC_API_KEY"),
		PluginDir:                p.str("SVC_PLUGIN_DIR", ""),
		ProviderPlugin:           p.str("SVC_PROVIDER_PLUGIN", ""),
		EmailPlugin:              p.str("SVC_EMAIL_PLUGIN", ""),
		SOMPlugin:                p.str("SVC_SOM_PLUGIN", ""),
		ProviderAPIKey:           p.str("PROVIDER_API_KEY", ""),
		ProviderBaseURL:          p.httpURL("PROVIDER_BASE_URL", "https://api.openai.com/v1"),
		ProvidersFile:            p.str("SVC_PROVIDERS_FILE", ""),
		MockLatencyMS:            p.intRange("MOCK_LATENCY_MS", 0, 0, 600_000),
		PluginProcs:              p.intRange("SVC_PLUGIN_GOMAXPROCS", 0, 0, 4096),
		PriceFile:                p.str("SVC_PRICE_FILE", ""),
		PprofAddr:                p.str("SVC_PPROF_ADDR", ""),
		Metrics:                  p.booleanOr("SVC_METRICS", true),
		MetricsAddr:              p.optionalAddr("SVC_METRICS_ADDR"),
		MetricsTenantLabel:       p.boolean("SVC_METRICS_TENANT_LABEL"),
		MetricsLabelLimit:        p.intRange("SVC_METRICS_LABEL_LIMIT", 50, 1, 10_000),
		TraceContent:             p.boolean("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
		Tracing:                  p.tracing(),
		TrustedProxies:           p.prefixes("SVC_TRUSTED_PROXIES"),
		PolicyDir:                p.str("SVC_POLICY_DIR", ""),
		LearningInterval:         p.duration("SVC_LEARNING_INTERVAL", 5*time.Minute),
		AutoPromote:              p.boolean("SVC_AUTO_PROMOTE"),
		LogLevel:                 p.logLevel("SVC_LOG_LEVEL"),
		LogJSON:                  p.boolean("SVC_LOG_JSON"),
		LedgerKeyFile:            p.str("SVC_LEDGER_KEY_FILE", ""),
		LedgerCheckpointEntries:  p.intRange("SVC_LEDGER_CHECKPOINT_RUNS", 1000, 1, 10_000_000),
		LedgerCheckpointInterval: p.duration("SVC_LEDGER_CHECKPOINT_INTERVAL", time.Minute),
		CacheTTL:                 p.duration("SVC_CACHE_TTL", time.Hour),
		CacheMaxBytes:            int64(p.intRange("SVC_CACHE_MAX_BYTES", 4<<20, 0, 1<<40)),
		WebAllowPrivate:          p.allowlist("SVC_WEB_ALLOW_PRIVATE"),
		RateLimit:                p.intRange("SVC_RATE_LIMIT", 1200, 0, 1_000_000_000),
		MaxBodyBytes:             int64(p.intRange("SVC_MAX_BODY_BYTES", 8<<20, 1024, 1<<30)),
		ShutdownTimeout:          p.duration("SVC_SHUTDOWN_TIMEOUT", 30*time.Second),
		DrainDelay:               p.duration("SVC_DRAIN_DELAY", 0),

		AdminEmail:        p.str("SVC_ADMIN_EMAIL", ""),
		AdminPassword:     p.str("SVC_ADMIN_PASSWORD", ""),
		RequireLogin:      p.boolean("SVC_REQUIRE_LOGIN"),
		AllowPublicSignup: p.boolean("SVC_ALLOW_PUBLIC_SIGNUP"),
		AppBaseURL:        strings.TrimRight(p.httpURL("SVC_APP_BASE_URL", "http://localhost:4100"), "/"),
		EmailProviderKey:  p.str("EMAIL_PROVIDER_API_KEY", ""),
		EmailProviderURL:  p.httpURL("EMAIL_PROVIDER_URL", "https://api.resend.com/emails"),
		EmailFrom:         p.str("SVC_EMAIL_FROM", "svc <no-reply@localhost>"),
		SMTPHost:          p.str("SMTP_HOST", ""),
		SMTPPort:          p.intRange("SMTP_PORT", 587, 1, 65535),
		SMTPUsername:      p.str("SMTP_USERNAME", ""),
		SMTPPassword:      p.str("SMTP_PASSWORD", ""),
		SMTPTLS:           p.oneOf("SMTP_TLS", "starttls", "starttls", "tls", "none"),
	}
	if (c.AdminEmail == "") != (c.AdminPassword == "") {
		p.fail("SVC_ADMIN_EMAIL", "SVC_ADMIN_EMAIL and SVC_ADMIN_PASSWORD must be set together")
	}
	if c.LearningInterval < 0 {
		p.fail("SVC_LEARNING_INTERVAL", "must not be negative")
	}
	if c.LedgerCheckpointInterval <= 0 {
		p.fail("SVC_LEDGER_CHECKPOINT_INTERVAL", "must be positive")
	}
	if c.DBStatementTimeout <= 0 {
		p.fail("SVC_DB_STATEMENT_TIMEOUT", "must be positive")
	}
	if c.DBRefresh <= 0 {
		p.fail("SVC_DB_REFRESH", "must be positive")
	}
	if c.Postgres() {
		if _, err := pgx.ParseConfig(c.DBPath); err != nil {
			p.fail("SVC_DB", "is not a PostgreSQL address: %v", err)
		}
	}
	if c.JournalDir == "" {
		c.JournalDir = c.DBPath + ".runlog"
		if c.Postgres() {
			c.JournalDir = filepath.Join("data", "journal")
		}
	}
	if c.LedgerKeyFile == "" {
		c.LedgerKeyFile = filepath.Join(filepath.Dir(c.DBPath), "ledger.key")
		if c.Postgres() {
			c.LedgerKeyFile = filepath.Join("data", "ledger.key")
		}
	}
	if c.CacheTTL <= 0 {
		p.fail("SVC_CACHE_TTL", "must be positive")
	}
	if c.ShutdownTimeout <= 0 {
		p.fail("SVC_SHUTDOWN_TIMEOUT", "must be positive")
	}
	if c.DrainDelay < 0 {
		p.fail("SVC_DRAIN_DELAY", "must not be negative")
	}
	if exe, err := os.Executable(); err == nil {
		c.ExecutableDir = filepath.Dir(exe)
	}
	if c.PluginDir == "" && c.ExecutableDir != "" {
		c.PluginDir = filepath.Join(c.ExecutableDir, "plugins")
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return c, nil
}

// parser collects every bad variable instead of stopping at the first, so an
// operator fixes them all in one go.
type parser struct {
	getenv func(string) string
	errs   []error
}

func (p *parser) fail(name, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// prefixes reads a comma-separated list of IPs and CIDR prefixes.
func (p *parser) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(p.getenv(name), ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(entry); err == nil {
			out = append(out, pfx.Masked())
		} else if a, err := netip.ParseAddr(entry); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		} else {
			p.fail(name, "%q is neither an IP address nor a CIDR prefix", entry)
		}
	}
	return out
}

func (p *parser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *parser) apiKey(name string) string {
	v := p.getenv(name)
	switch {
	case v == "":
		return ""
	case strings.TrimSpace(v) != v || strings.ContainsAny(v, " \t\r\n"):
		p.fail(name, "must not contain white space")
	case len(v) < 16:
		p.fail(name, "must be at least 16 characters (for example the output of `openssl rand -hex 32`)")
	}
	return v
}

func (p *parser) addr(name, def string) string {
	v := p.str(name, def)
	if _, port, err := net.SplitHostPort(v); err != nil {
		p.fail(name, "%q is not a host:port address", v)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.fail(name, "%q has an invalid port", v)
	}
	return v
}

func (p *parser) httpURL(name, def string) string {
	v := p.str(name, def)
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(name, "%q is not an absolute http(s) URL", v)
	}
	return v
}

// tracing says whether the OTEL_* variables ask for traces: an endpoint,
// OTEL_TRACES_EXPORTER's list naming otlp (svc's one exporter), and not
// OTEL_SDK_DISABLED. Traces on, the protocol must be one svc exports with.
func (p *parser) tracing() bool {
	endpoint := p.str("OTEL_EXPORTER_OTLP_ENDPOINT", "") != ""
	traces := p.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") != ""
	disabled := p.boolean("OTEL_SDK_DISABLED")
	otlp := false
	for _, e := range strings.Split(p.str("OTEL_TRACES_EXPORTER", "otlp"), ",") {
		otlp = otlp || strings.EqualFold(strings.TrimSpace(e), "otlp")
	}
	on := (endpoint || traces) && !disabled && otlp
	if on {
		p.otlpProtocol()
	}
	return on
}

// otlpProtocol checks the protocol the traces are exported with: the
// first of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and OTEL_EXPORTER_OTLP_PROTOCOL
// that is set.
func (p *parser) otlpProtocol() {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := strings.ToLower(p.str(name, ""))
		switch v {
		case "":
			continue
		case "grpc", "http/protobuf":
		default:
			p.fail(name, "%q is not supported: svc exports traces with grpc or http/protobuf only", v)
		}
		return
	}
}

// optionalAddr is a host:port address, or empty when unset.
func (p *parser) optionalAddr(name string) string {
	if strings.TrimSpace(p.getenv(name)) == "" {
		return ""
	}
	return p.addr(name, "")
}

// booleanOr is a boolean that is def when unset.
func (p *parser) booleanOr(name string, def bool) bool {
	if strings.TrimSpace(p.getenv(name)) == "" {
		return def
	}
	return p.boolean(name)
}

func (p *parser) boolean(name string) bool {
	switch v := strings.ToLower(strings.TrimSpace(p.getenv(name))); v {
	case "", "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	default:
		p.fail(name, "%q is not a boolean (use true or false)", v)
		return false
	}
}

func (p *parser) intRange(name string, def, lo, hi int) int {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(name, "%q is not a whole number from %d to %d", v, lo, hi)
		return def
	}
	return n
}

func (p *parser) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	if v == "0" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.fail(name, "%q is not a duration (for example 90s, 5m, 1h)", v)
		return def
	}
	return d
}

func (p *parser) logLevel(name string) hclog.Level {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return hclog.Info
	}
	l := hclog.LevelFromString(v)
	if l == hclog.NoLevel || l == hclog.Off {
		p.fail(name, "%q is not a log level (trace, debug, info, warn, error)", v)
		return hclog.Info
	}
	return l
}

func (p *parser) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(p.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

func (p *parser) allowlist(name string) netguard.Allowlist {
	l, err := netguard.ParseAllowlist(p.getenv(name))
	if err != nil {
		p.fail(name, "%v", err)
	}
	return l
}
