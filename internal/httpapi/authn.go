package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ratelimit"
	"github.com/svc-gateway/svc/internal/tracing"
)

// public serves h without an identity. Under /api/v1 the caller's address
// still draws from the standard limiter.
func (s *Server) public(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isManagementPath(r.URL.Path) {
			if err := s.limit(r, "ip:"+s.clientKey(r)); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// api serves h to any valid identity of the management API, which it puts
// in the request's context, and applies the standard limiter per caller.
func (s *Server) api(h handlerFunc) http.Handler {
	return s.identified(auth.ScopeManagement, false, h)
}

// admin is api for operations that need the admin right. A refusal is
// audited.
func (s *Server) admin(h handlerFunc) http.Handler {
	return s.identified(auth.ScopeManagement, true, h)
}

// gateway serves h to a valid identity of the /v1 gateway.
func (s *Server) gateway(h handlerFunc) http.Handler {
	return s.identified(auth.ScopeGateway, false, h)
}

func (s *Server) identified(scope auth.Scope, needAdmin bool, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.identify(w, r, scope, needAdmin, h); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) identify(w http.ResponseWriter, r *http.Request, scope auth.Scope, needAdmin bool, h handlerFunc) error {
	limited := scope == auth.ScopeManagement
	id, err := s.authenticate(r, scope)
	if err != nil {
		// Failed attempts draw from the address's bucket, so guessing
		// tokens is slowed down like any other traffic.
		if limited && errs.Is(err, errs.Unauthorized) {
			if lerr := s.limit(r, "ip:"+s.clientKey(r)); lerr != nil {
				return lerr
			}
		}
		return err
	}
	info(r).identified(id)
	if id.Via == auth.ViaSession && !safeMethod(r.Method) {
		if err := s.sameOrigin(r); err != nil {
			return err
		}
	}
	if limited {
		if err := s.limit(r, s.limiterKey(id, r)); err != nil {
			return err
		}
	}
	if needAdmin {
		if err := auth.RequireAdmin(id); err != nil {
			s.Audit.Record(r.Context(), audit.Event{
				TenantID: id.TenantID, Actor: id.Actor(), Action: "authz.denied", Decision: audit.Deny,
				Target: r.Method + " " + r.URL.Path,
			})
			return err
		}
	}
	return h(w, r.WithContext(auth.NewContext(r.Context(), id)))
}

// authenticate identifies the caller, under its own span.
func (s *Server) authenticate(r *http.Request, scope auth.Scope) (*auth.Identity, error) {
	_, span := tracing.Start(r.Context(), "authenticate", trace.SpanKindInternal)
	id, err := s.Auth.Identify(r, scope)
	if span.IsRecording() {
		if id != nil {
			attrs := tracing.NewAttrs()
			attrs.Add(tracing.TenantID.String(id.TenantID), attribute.String("svc.auth.via", string(id.Via)))
			attrs.SetOn(span)
		}
		tracing.Error(span, err)
		span.End()
	}
	return id, err
}

// limiterKey is the standard limiter's bucket of a caller: its key, user or
// the bootstrap token; open dev mode callers by address.
func (s *Server) limiterKey(id *auth.Identity, r *http.Request) string {
	switch id.Via {
	case auth.ViaKey:
		return "key:" + id.KeyID
	case auth.ViaSession:
		return "user:" + id.UserID
	case auth.ViaBootstrap:
		return "bootstrap"
	default:
		return "ip:" + s.clientKey(r)
	}
}

// limit draws one token of the standard limiter's bucket key for r.
func (s *Server) limit(r *http.Request, key string) error {
	ok, wait, err := s.apiLimiter.Allow(r.Context(), key)
	if err != nil {
		return err
	}
	if !ok {
		s.apiLimited.Inc()
		return ratelimit.Exceeded("too many requests", wait)
	}
	return nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func isManagementPath(p string) bool { return len(p) >= 8 && p[:8] == "/api/v1/" }

// identity returns the caller resolved by api or admin.
func identity(r *http.Request) *auth.Identity {
	id := auth.FromContext(r.Context())
	if id == nil {
		panic("httpapi: handler that needs an identity is not wrapped by api or admin")
	}
	return id
}
