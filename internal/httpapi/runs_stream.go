package httpapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// DefaultStreamPing is how often a live stream with nothing to say sends
// a comment, so that proxies and browsers keep it open.
const DefaultStreamPing = 15 * time.Second

// streamRuns is GET /api/v1/runs/stream: every run of the caller's tenant
// recorded from now on, as Server-Sent Events (`event: run`, `id:` the
// run's id, `data:` the run as GET /api/v1/runs lists it); query route,
// status, app, agent, model. A reader that falls behind is dropped (the
// stream ends) rather than let the gateway wait; it reconnects and reloads
// the list. The stream ends when the client goes or svc shuts down.
func (s *Server) streamRuns(w http.ResponseWriter, r *http.Request) error {
	// Subscribed before the headers leave: a client that has them sees
	// every run recorded after.
	sub, err := s.Feed.Subscribe(identity(r).TenantID, runFilter(r), 0)
	if err != nil {
		return err
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	// The stream lasts as long as its reader: a write timeout the server
	// sets must not cut it (net/http lifts the read deadline itself once
	// the request is read).
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return nil
	}
	ping := time.NewTicker(s.streamPing)
	defer ping.Stop()
	var buf []byte
	for {
		select {
		case run := <-sub.Runs():
			data, err := json.Marshal(run.Listed())
			if err != nil {
				s.log.Error("encoding a run for a live stream failed", "run", run.ID, "error", err)
				continue
			}
			buf = append(append(append(append(append(buf[:0], "event: run\nid: "...), run.ID...), "\ndata: "...), data...), "\n\n"...)
		case <-ping.C:
			buf = append(buf[:0], ": ping\n\n"...)
		case <-sub.Done():
			return nil
		case <-r.Context().Done():
			return nil
		}
		if _, err := w.Write(buf); err != nil {
			return nil
		}
		if rc.Flush() != nil {
			return nil
		}
	}
}
