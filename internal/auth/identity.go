// Package auth proves who is calling: the bootstrap token, tenant API keys,
// open dev mode, and (through the Sessions seam) signed-in people. The
// resulting Identity is resolved once per request and carried in its context.
package auth

import (
	"context"

	"github.com/svc-gateway/svc/internal/errs"
)

// Mode says what svc may do for a key's traffic.
type Mode string

// The key modes.
const (
	// Observe records what would have been done and returns the live answer;
	// it never blocks and never serves from a cache or an artifact.
	Observe Mode = "observe"
	// Optimize lets caches, artifacts and policy enforcement act.
	Optimize Mode = "optimize"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == Observe || m == Optimize }

// Via says how an identity was proven.
type Via string

// The ways an identity is proven.
const (
	ViaOpen      Via = "open"      // open dev mode: no credentials configured
	ViaBootstrap Via = "bootstrap" // the SVC_API_KEY token
	ViaKey       Via = "key"       // a tenant API key
	ViaSession   Via = "session"   // a signed-in user's session cookie
)

// Identity is the caller of one request: whose tenant it acts in, with which
// rights, and on behalf of which app, agent and subject.
type Identity struct {
	TenantID string
	KeyID    string // set when Via is ViaKey
	UserID   string // set when Via is ViaSession
	OrgRole  string // the user's role in TenantID, when Via is ViaSession
	Via      Via
	Mode     Mode
	Admin    bool
	App      string // X-Svc-App, or the key's pinned app
	Agent    string // X-Svc-Agent
	Subject  string // X-Svc-Subject
}

// Actor names the caller in audit events: "key:<id>", "user:<id>",
// "bootstrap" or "open".
func (id *Identity) Actor() string {
	switch id.Via {
	case ViaKey:
		return "key:" + id.KeyID
	case ViaSession:
		return "user:" + id.UserID
	default:
		return string(id.Via)
	}
}

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity in ctx, or nil.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}

// RequireAdmin returns errs.Forbidden unless id may perform admin operations.
func RequireAdmin(id *Identity) error {
	if id == nil || !id.Admin {
		return errs.E(errs.Forbidden, "admin_required", "this operation requires an admin key or role")
	}
	return nil
}
