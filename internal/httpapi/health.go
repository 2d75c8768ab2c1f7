package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/version"
)

type healthResponse struct {
	OK           bool           `json:"ok"`
	Version      string         `json:"version"`
	Provider     string         `json:"provider"`
	External     bool           `json:"external"`
	PublicSignup bool           `json:"publicSignup"`
	Draining     bool           `json:"draining"`
	Database     healthDatabase `json:"database"`
}

// healthDatabase is the database as /health sees it: which engine, and
// whether it answered the ping.
type healthDatabase struct {
	Engine string `json:"engine"`
	OK     bool   `json:"ok"`
}

// healthPingTimeout bounds the database's ping: a load balancer's check
// must hear about a database that hangs, not wait for it.
const healthPingTimeout = 2 * time.Second

// health answers whether this svc should take requests: 200 when its
// database answers, 503 when it does not or when svc is draining (stopping:
// in-flight requests finish, new ones should go to another replica).
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthPingTimeout)
	dbOK := s.Store.Ping(ctx) == nil
	cancel()
	draining := s.Draining != nil && s.Draining()
	res := healthResponse{
		OK:           dbOK && !draining,
		Version:      version.Version,
		Provider:     s.providerName(),
		External:     s.External,
		PublicSignup: s.Config.AllowPublicSignup,
		Draining:     draining,
		Database:     healthDatabase{Engine: s.DBEngine, OK: dbOK},
	}
	status := http.StatusOK
	if !res.OK {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, res)
	return nil
}

// providerName is what /health names as the provider: the environment's
// one, or, with a providers file, the distinct plugins of its instances
// ("openai,anthropic").
func (s *Server) providerName() string {
	if s.Config.ProvidersFile == "" || s.Providers == nil {
		return s.Config.ProviderName()
	}
	return providers.Plugins(s.Providers.Current())
}
