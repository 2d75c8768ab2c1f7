package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
)

// DefaultStreamPing is how often a live stream with nothing to say sends
// a comment, so that proxies and browsers keep it open.
const DefaultStreamPing = 15 * time.Second

// streamWriteTimeout bounds each write of a live stream: a reader that
// takes no more for this long is dropped, so that it holds no handler,
// connection or subscription, nor delays a shutdown.
const streamWriteTimeout = 15 * time.Second

// streamRuns is GET /api/v1/runs/stream: every run of the caller's tenant
// recorded from now on, as Server-Sent Events (`event: run`, `id:` the
// run's id, `data:` the run as GET /api/v1/runs lists it); query route,
// status, app, agent, model. A reader that falls behind is dropped (the
// stream ends) rather than let the gateway wait; it reconnects and reloads
// the list. The caller is identified again before each run and at each
// ping: the stream ends once its key is revoked, its person leaves the
// org, or the org is deleted. It ends too when the client goes or svc
// shuts down.
func (s *Server) streamRuns(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	caller := identity(r)
	// Subscribed before the headers leave: a client that has them sees
	// every run recorded after.
	sub, err := s.Feed.Subscribe(caller.TenantID, f, 0)
	if err != nil {
		return err
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	// The stream lasts as long as its reader, not the server's write
	// timeout: each write has its own deadline, and none holds while the
	// stream waits (net/http lifts the read deadline itself once the
	// request is read).
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				return false
			}
		}
		if rc.Flush() != nil {
			return false
		}
		_ = rc.SetWriteDeadline(time.Time{})
		return true
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	if !send(nil) {
		return nil
	}
	ping := time.NewTicker(s.streamPing)
	defer ping.Stop()
	var buf []byte
	for {
		select {
		case run := <-sub.Runs():
			if !s.stillCaller(r, caller) {
				return nil
			}
			data, err := json.Marshal(run.Listed())
			if err != nil {
				s.log.Error("encoding a run for a live stream failed", "run", run.ID, "error", err)
				continue
			}
			buf = append(append(append(append(append(buf[:0], "event: run\nid: "...), run.ID...), "\ndata: "...), data...), "\n\n"...)
		case <-ping.C:
			if !s.stillCaller(r, caller) {
				return nil
			}
			buf = append(buf[:0], ": ping\n\n"...)
		case <-sub.Done():
			return nil
		case <-r.Context().Done():
			return nil
		}
		if !send(buf) {
			return nil
		}
	}
}

// stillCaller reports whether r's credentials still identify was, as the
// middleware would admit a request now, in the same tenant: a revoked key,
// a person no longer a member (their session then resolves to another org
// or to none) or a deleted org fails. Every identity api admits may read
// runs, so the read right goes with being admitted. A key or session
// resolves from the caches the middleware uses, which a revocation or a
// membership change clears.
func (s *Server) stillCaller(r *http.Request, was *auth.Identity) bool {
	id, err := s.Auth.Identify(r, auth.ScopeManagement)
	return err == nil && id.TenantID == was.TenantID && id.Via == was.Via && id.KeyID == was.KeyID && id.UserID == was.UserID
}
