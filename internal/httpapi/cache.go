package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
)

// cacheStatsAnswer answers GET /api/v1/cache/stats.
type cacheStatsAnswer struct {
	Stats []cache.Stat `json:"stats"`
}

// cacheStats is GET /api/v1/cache/stats.
func (s *Server) cacheStats(w http.ResponseWriter, r *http.Request) error {
	stats, err := s.Cache.Stats(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cacheStatsAnswer{Stats: stats})
	return nil
}

type invalidateRequest struct {
	CacheType string `json:"cacheType"`
}

// cacheInvalidated answers POST /api/v1/cache/invalidate: the tier
// emptied, or "all".
type cacheInvalidated struct {
	CacheType string `json:"cacheType"`
	OK        bool   `json:"ok"`
}

// invalidateCache is POST /api/v1/cache/invalidate (admin): one tier, or
// every tier when cacheType is absent, of the caller's tenant only.
func (s *Server) invalidateCache(w http.ResponseWriter, r *http.Request) error {
	var req invalidateRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	tier, err := cache.ParseTier(req.CacheType)
	if err != nil {
		return err
	}
	id := identity(r)
	if err := s.Cache.Invalidate(r.Context(), id.TenantID, tier); err != nil {
		return err
	}
	scope := string(tier)
	if scope == "" {
		scope = "all"
	}
	s.Audit.Record(r.Context(), audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "cache.invalidate",
		Decision: audit.Allow, Target: scope})
	writeJSON(w, http.StatusOK, cacheInvalidated{CacheType: scope, OK: true})
	return nil
}

type toolCacheRequest struct {
	ToolName   string          `json:"toolName"`
	Subject    *string         `json:"subject"`
	Args       json.RawMessage `json:"args"`
	Result     json.RawMessage `json:"result"`
	TTLSeconds *float64        `json:"ttlSeconds"`
}

// call is the request's tool call; the subject defaults to X-Svc-Subject.
func (req toolCacheRequest) call(r *http.Request) cache.ToolCall {
	tc := cache.ToolCall{ToolName: req.ToolName, Subject: identity(r).Subject, Args: req.Args}
	if req.Subject != nil {
		tc.Subject = *req.Subject
	}
	return tc
}

// toolCacheCheckAnswer answers POST /api/v1/tool-cache/check: the cached
// result on a hit, no result on a miss.
type toolCacheCheckAnswer struct {
	Hit    bool            `json:"hit"`
	Result json.RawMessage `json:"result,omitempty"`
}

// toolCacheCheck is POST /api/v1/tool-cache/check.
func (s *Server) toolCacheCheck(w http.ResponseWriter, r *http.Request) error {
	var req toolCacheRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Result != nil || req.TTLSeconds != nil {
		return errs.Invalidf("result", "check takes toolName, subject and args only")
	}
	result, hit, err := s.Cache.CheckTool(identity(r).TenantID, req.call(r))
	if err != nil {
		return err
	}
	if !hit {
		writeJSON(w, http.StatusOK, toolCacheCheckAnswer{})
		return nil
	}
	writeJSON(w, http.StatusOK, toolCacheCheckAnswer{Hit: true, Result: result})
	return nil
}

// toolCacheStored answers POST /api/v1/tool-cache/store.
type toolCacheStored struct {
	ExpiresAt time.Time `json:"expiresAt"`
	Stored    bool      `json:"stored"`
}

// toolCacheStore is POST /api/v1/tool-cache/store.
func (s *Server) toolCacheStore(w http.ResponseWriter, r *http.Request) error {
	var req toolCacheRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var ttl time.Duration
	if req.TTLSeconds != nil {
		if *req.TTLSeconds <= 0 {
			return errs.Invalidf("ttlSeconds", "ttlSeconds must be positive")
		}
		ttl = time.Duration(*req.TTLSeconds * float64(time.Second))
	}
	expires, err := s.Cache.StoreTool(identity(r).TenantID, req.call(r), req.Result, ttl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toolCacheStored{ExpiresAt: expires.UTC(), Stored: true})
	return nil
}
