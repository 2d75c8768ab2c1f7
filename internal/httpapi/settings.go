package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
)

type putSettingRequest struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// settingsAnswer answers GET and PUT /api/v1/settings: the public view,
// secrets hidden.
type settingsAnswer struct {
	Settings map[string]any `json:"settings"`
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Settings.Get(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, settingsAnswer{Settings: st.Public()})
	return nil
}

// putSettings changes one setting: {key, value}.
func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) error {
	var req putSettingRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Key == "" {
		return errs.Invalidf("key", "key is required")
	}
	if req.Value == nil {
		return errs.Invalidf("value", "value is required (null clears a URL or secret)")
	}
	id := identity(r)
	st, err := s.Settings.Set(r.Context(), id.TenantID, req.Key, req.Value)
	if err != nil {
		return err
	}
	s.Audit.Record(r.Context(), audit.Event{
		TenantID: id.TenantID, Actor: id.Actor(), Action: "settings.update", Decision: audit.Allow, Target: req.Key,
		Details: map[string]any{"value": st.Public()[req.Key]},
	})
	writeJSON(w, http.StatusOK, settingsAnswer{Settings: st.Public()})
	return nil
}
