package ledger

import (
	"context"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/changes"
)

// runsTopic carries the runs one replica stored, for the live streams of
// the others: "<tenant> <run id> <run id> …", one tenant a notice. The
// feed never hands a replica its own notices: its streams have the runs
// already, published as they were journaled.
const runsTopic = "runs"

// noticeBytes bounds a notice's payload, well under PostgreSQL's 8000
// bytes for a NOTIFY's (which adds the topic and the sender's name).
const noticeBytes = 4000

// heardBacklog is how many notices may wait for their runs to be read;
// one heard beyond collapses the backlog into changes.Everything.
const heardBacklog = 64

// RunsReader reads runs another replica stored.
type RunsReader interface {
	// RunsByID returns the tenant's runs among ids, as a listing shows
	// them, oldest first; ids of another tenant's runs read nothing.
	RunsByID(ctx context.Context, tenantID string, ids []string) ([]Run, error)
}

// Replicate makes the live streams follow the runs every replica of the
// database records, not only this one's: once the writer has stored a
// batch, its runs are announced on feed, per tenant; a notice from another
// replica, for a tenant someone streams here, is read from runs and
// published on the Feed. Reads and notices happen off the requests' path;
// a failed one is logged and its runs miss the streams (which are live,
// not durable: the runs list has them). Where the runs missed are not
// known — the feed reconnected (changes.Everything), or more notices came
// than the backlog holds, which collapses into the same — every stream
// here is dropped, as a reader that fell behind is, for its client to
// reload the list rather than go on with a silent gap. Call it before
// recording.
func (r *Recorder) Replicate(feed changes.Feed, runs RunsReader, logger hclog.Logger) {
	r.OnStored(func(recs []*Record) {
		for _, payload := range runNotices(recs) {
			changes.Announce(context.Background(), feed, runsTopic, payload)
		}
	})
	heard := make(chan string, heardBacklog)
	startOver := func(why string) {
		for len(heard) > 0 { // what is queued is for the streams dropped
			select {
			case <-heard:
			default:
			}
		}
		if r.feed.Subscribers() > 0 {
			logger.Info(why+"; the live streams are dropped for their clients to reload", "streams", r.feed.Subscribers())
		}
		r.feed.Drop()
	}
	feed.Subscribe(runsTopic, func(payload string) {
		if payload == changes.Everything {
			startOver("the change feed reconnected: runs the other replicas stored meanwhile are not known")
			return
		}
		tenantID, _, _ := strings.Cut(payload, " ")
		if !r.feed.Streams(tenantID) {
			return
		}
		select {
		case heard <- payload:
		default:
			// Collapsed, as on a reconnect: nothing is lost silently.
			startOver("the live streams fell behind the other replicas' runs")
		}
	})
	r.followers.Go(func() { r.follow(heard, runs, logger) })
}

// follow reads the runs of each notice heard and publishes them, until the
// recorder closes.
func (r *Recorder) follow(heard <-chan string, runs RunsReader, logger hclog.Logger) {
	for {
		select {
		case <-r.stop:
			return
		case payload := <-heard:
			tenantID, ids := parseRunNotice(payload)
			if len(ids) == 0 || !r.feed.Streams(tenantID) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), changes.Timeout)
			got, err := runs.RunsByID(ctx, tenantID, ids)
			cancel()
			if err != nil {
				logger.Warn("reading the runs another replica stored failed; the live streams miss them", "tenant", tenantID, "runs", len(ids), "error", err)
				continue
			}
			for i := range got {
				r.feed.Publish(&got[i])
			}
		}
	}
}

// runNotices are the payloads that announce recs' runs: per tenant, in the
// order they first appear, their ids split so that no payload passes
// noticeBytes.
func runNotices(recs []*Record) []string {
	var tenants []string
	ids := map[string][]string{}
	for _, rec := range recs {
		t := rec.Run.TenantID
		if _, ok := ids[t]; !ok {
			tenants = append(tenants, t)
		}
		ids[t] = append(ids[t], rec.Run.ID)
	}
	var notices []string
	var b strings.Builder
	for _, t := range tenants {
		b.Reset()
		for _, id := range ids[t] {
			if b.Len() > 0 && b.Len()+1+len(id) > noticeBytes {
				notices = append(notices, b.String())
				b.Reset()
			}
			if b.Len() == 0 {
				b.WriteString(t)
			}
			b.WriteByte(' ')
			b.WriteString(id)
		}
		notices = append(notices, b.String())
	}
	return notices
}

// parseRunNotice reads a runsTopic payload: its tenant and run ids (none
// for a payload that names no run).
func parseRunNotice(payload string) (tenantID string, ids []string) {
	fields := strings.Fields(payload)
	if len(fields) < 2 {
		return "", nil
	}
	return fields[0], fields[1:]
}
