// Package changes names the feed by which one replica tells the others
// sharing its database that something they may hold in memory changed: a
// key revoked, sessions to read again, a tenant's settings, its serving
// index, its cache. The store implements it (PostgreSQL's LISTEN/NOTIFY);
// the domain packages announce and follow changes through it without
// knowing the engine.
package changes

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Feed carries changes between the replicas of one database.
type Feed interface {
	// Notify tells every other replica (never the caller's own) that
	// something named by payload changed on topic. Call it once the change
	// is committed; a failed or lost notification is healed by the refresh
	// bound, so callers log rather than fail on its error.
	Notify(ctx context.Context, topic, payload string) error
	// Subscribe calls fn with the payload of each change another replica
	// announces on topic, one call at a time, and with Everything whenever
	// the feed (re)connects, since changes announced meanwhile were missed.
	// fn must be quick and must not call Notify.
	Subscribe(topic string, fn func(payload string))
}

// Everything is the payload that names everything of a topic: drop or
// reload it all.
const Everything = ""

// Timeout bounds the sending of one notice.
const Timeout = 5 * time.Second

// Announce tells the other replicas, through feed, that payload changed on
// topic; call it once the change is committed. The notice outlives ctx's
// cancellation (keeping its values), bounded by Timeout instead: a client
// that hangs up right after a revocation must not cancel the notice and
// leave the other replicas accepting the key until the refresh bound. It
// never fails the caller, whose change is already made: a failure goes to
// the feed's log (see Logged), and the refresh bound heals it.
func Announce(ctx context.Context, feed Feed, topic, payload string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	_ = feed.Notify(ctx, topic, payload)
}

// Logged returns feed with every failed Notify logged to log.
func Logged(feed Feed, log hclog.Logger) Feed { return logged{feed, log} }

type logged struct {
	Feed
	log hclog.Logger
}

func (l logged) Notify(ctx context.Context, topic, payload string) error {
	err := l.Feed.Notify(ctx, topic, payload)
	if err != nil {
		l.log.Warn("announcing a change failed; the other replicas catch up within the refresh bound", "topic", topic, "error", err)
	}
	return err
}
