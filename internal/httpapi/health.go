package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/version"
)

type healthResponse struct {
	OK           bool   `json:"ok"`
	Version      string `json:"version"`
	Provider     string `json:"provider"`
	External     bool   `json:"external"`
	PublicSignup bool   `json:"publicSignup"`
}

// health answers liveness: 200 when storage answers, 503 when it does not.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	res := healthResponse{
		OK:           s.Store.Ping(r.Context()) == nil,
		Version:      version.Version,
		Provider:     s.providerName(),
		External:     s.External,
		PublicSignup: s.Config.AllowPublicSignup,
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
