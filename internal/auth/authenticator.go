package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

// The identity headers a caller may send.
const (
	HeaderApp     = "X-Svc-App"
	HeaderAgent   = "X-Svc-Agent"
	HeaderSubject = "X-Svc-Subject"
)

// maxHeaderValue bounds identity header values: they end up in keys,
// records and logs.
const maxHeaderValue = 200

// Sessions resolves signed-in people. It is the seam for account mode; a nil
// Sessions means no accounts exist.
type Sessions interface {
	// FromRequest returns the identity of r's session cookie, or nil when
	// there is none. An invalid or expired cookie is nil, not an error.
	FromRequest(r *http.Request) (*Identity, error)
	// LoginRequired reports whether management calls need a session or a
	// token even in open dev mode: once a user exists, or when
	// SVC_REQUIRE_LOGIN is set.
	LoginRequired(ctx context.Context) bool
}

// Scope says which surface a request is for; account mode treats the gateway
// and the management API differently.
type Scope uint8

// The scopes.
const (
	ScopeManagement Scope = iota // /api/v1: sessions count, login may be required
	ScopeGateway                 // /v1: API-key rules only
)

// Authenticator resolves a request to an Identity.
type Authenticator struct {
	bootstrapHash [32]byte
	bootstrap     bool
	keys          *Keys
	sessions      Sessions
}

// NewAuthenticator returns an authenticator. An empty bootstrap token means
// open dev mode. sessions may be nil.
func NewAuthenticator(bootstrap string, keys *Keys, sessions Sessions) *Authenticator {
	a := &Authenticator{keys: keys, sessions: sessions, bootstrap: bootstrap != ""}
	if a.bootstrap {
		a.bootstrapHash = sha256.Sum256([]byte(bootstrap))
	}
	return a
}

// Identify resolves r's caller. A bearer token, when present, must be valid,
// but for one case: in open dev mode a token that is not an svc_ key counts
// as no token, since the OpenAI SDKs refuse to start without some key (see
// placeholder). Without one: a session identifies a person; otherwise open
// dev mode grants admin of the default tenant, and bearer mode answers
// errs.Unauthorized. Identity headers that are too long or hold control
// characters are errs.Invalid.
func (a *Authenticator) Identify(r *http.Request, scope Scope) (*Identity, error) {
	id, err := a.credential(r, scope)
	if err != nil {
		return nil, err
	}
	return id, applyHeaders(id, r.Header)
}

func (a *Authenticator) credential(r *http.Request, scope Scope) (*Identity, error) {
	token, ok := bearer(r.Header.Get("Authorization"))
	placeholder := ok && a.placeholder(token)
	switch {
	case ok && !placeholder:
		return a.token(r.Context(), token)
	case !ok && r.Header.Get("Authorization") != "":
		return nil, errs.E(errs.Unauthorized, "invalid_authorization", "the Authorization header must be \"Bearer <token>\"")
	}
	if scope == ScopeManagement && a.sessions != nil {
		id, err := a.sessions.FromRequest(r)
		if err != nil || id != nil {
			return id, err
		}
	}
	loginRequired := scope == ScopeManagement && a.sessions != nil && a.sessions.LoginRequired(r.Context())
	if a.bootstrap || loginRequired {
		if placeholder {
			// A token was sent, so the refusal names it, as bearer mode does.
			return nil, errInvalidToken
		}
		return nil, errs.E(errs.Unauthorized, "missing_credentials", "sign in or send Authorization: Bearer <token>")
	}
	return &Identity{TenantID: tenant.DefaultID, Via: ViaOpen, Mode: Optimize, Admin: true}, nil
}

// placeholder reports whether token stands for no credentials: in open dev
// mode, any token that is not an svc_ key (OPENAI_API_KEY=anything). An
// svc_ token is always looked up, so a mistyped real key is refused rather
// than silently becoming admin; with SVC_API_KEY set nothing is a
// placeholder.
func (a *Authenticator) placeholder(token string) bool {
	return !a.bootstrap && !strings.HasPrefix(token, TokenPrefix)
}

func (a *Authenticator) token(ctx context.Context, token string) (*Identity, error) {
	if a.bootstrap {
		h := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(h[:], a.bootstrapHash[:]) == 1 {
			return &Identity{TenantID: tenant.DefaultID, Via: ViaBootstrap, Mode: Optimize, Admin: true}, nil
		}
	}
	if !strings.HasPrefix(token, TokenPrefix) {
		return nil, errInvalidToken
	}
	k, err := a.keys.Lookup(ctx, token)
	if err != nil {
		return nil, err
	}
	return &Identity{TenantID: k.TenantID, KeyID: k.ID, Via: ViaKey, Mode: k.Mode, Admin: k.Admin, App: k.AppID}, nil
}

// applyHeaders copies the identity headers onto id; a key's pinned app wins
// over X-Svc-App.
func applyHeaders(id *Identity, h http.Header) error {
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{HeaderApp, &id.App}, {HeaderAgent, &id.Agent}, {HeaderSubject, &id.Subject}} {
		v := h.Get(f.name)
		if v == "" {
			continue
		}
		if len(v) > maxHeaderValue || !validHeaderValue(v) {
			return errs.Invalidf(f.name, "%s must be printable text of at most %d bytes", f.name, maxHeaderValue)
		}
		if f.name == HeaderApp && id.App != "" && id.Via == ViaKey {
			continue // pinned
		}
		*f.dst = v
	}
	return nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	t := strings.TrimSpace(v[len(scheme):])
	return t, t != ""
}

// validHeaderValue reports whether v is printable: no control characters.
func validHeaderValue(v string) bool {
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

// Access is the way svc admits callers at a given moment.
type Access string

// The ways of admitting callers.
const (
	// AccessBearer: SVC_API_KEY is set; every call needs it or an svc_ key.
	AccessBearer Access = "bearer"
	// AccessAccount: no SVC_API_KEY, but users exist or SVC_REQUIRE_LOGIN is
	// set; the management API needs a sign-in or a key, while /v1 calls
	// without an svc_ key still act for the default tenant.
	AccessAccount Access = "account"
	// AccessOpen: no SVC_API_KEY and no accounts; calls without an svc_ key
	// are admin of the default tenant.
	AccessOpen Access = "open"
)

// Access reports how callers are admitted now. Account mode begins when the
// first user is created, so the answer may change while svc runs, from open
// to account.
func (a *Authenticator) Access(ctx context.Context) Access {
	switch {
	case a.bootstrap:
		return AccessBearer
	case a.sessions != nil && a.sessions.LoginRequired(ctx):
		return AccessAccount
	}
	return AccessOpen
}

// Describe says in a sentence what m means for a caller, for svc's log.
func (m Access) Describe() string {
	switch m {
	case AccessBearer:
		return "bearer: every call needs SVC_API_KEY or an svc_ key"
	case AccessAccount:
		return "account mode: the management API needs a sign-in or an svc_ key; /v1 calls without an svc_ key act for the default tenant"
	}
	return "open dev mode: calls without an svc_ key are admin of the default tenant"
}
