package httpapi

import (
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
)

type createKeyRequest struct {
	Name  string  `json:"name"`
	Mode  string  `json:"mode"`
	AppID *string `json:"appId"`
	Admin *bool   `json:"admin"`
}

type keyView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Mode      auth.Mode  `json:"mode"`
	AppID     *string    `json:"appId"`
	Admin     bool       `json:"admin"`
	Prefix    string     `json:"prefix"`
	Token     string     `json:"token,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

// keyList answers GET /api/v1/keys.
type keyList struct {
	Keys []keyView `json:"keys"`
}

// keyAnswer answers a change to one key.
type keyAnswer struct {
	Key keyView `json:"key"`
}

func viewKey(k auth.Key) keyView {
	v := keyView{ID: k.ID, Name: k.Name, Mode: k.Mode, Admin: k.Admin, Prefix: k.Prefix, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
	if k.AppID != "" {
		v.AppID = &k.AppID
	}
	return v
}

// createKey makes a key; its token is in this answer and nowhere else.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req createKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	nk := auth.NewKey{Name: req.Name, Mode: auth.Mode(req.Mode)}
	if req.AppID != nil {
		nk.AppID = *req.AppID
	}
	if req.Admin != nil {
		nk.Admin = *req.Admin
	}
	id := identity(r)
	k, token, err := s.Keys.Create(r.Context(), id.TenantID, nk)
	if err != nil {
		return err
	}
	s.Audit.Record(r.Context(), audit.Event{
		TenantID: id.TenantID, Actor: id.Actor(), Action: "key.create", Decision: audit.Allow, Target: k.ID,
		Details: map[string]any{"name": k.Name, "mode": k.Mode, "admin": k.Admin, "appId": k.AppID},
	})
	v := viewKey(k)
	v.Token = token
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.Keys.List(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	views := make([]keyView, len(keys))
	for i, k := range keys {
		views[i] = viewKey(k)
	}
	writeJSON(w, http.StatusOK, keyList{Keys: views})
	return nil
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	k, err := s.Keys.Revoke(r.Context(), id.TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.Audit.Record(r.Context(), audit.Event{
		TenantID: id.TenantID, Actor: id.Actor(), Action: "key.revoke", Decision: audit.Allow, Target: k.ID,
		Details: map[string]any{"name": k.Name},
	})
	writeJSON(w, http.StatusOK, keyAnswer{Key: viewKey(k)})
	return nil
}
