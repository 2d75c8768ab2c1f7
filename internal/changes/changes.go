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

// Timeout bounds the notifying of a change made where no request context
// is at hand.
const Timeout = 5 * time.Second

// Announce notifies feed with a fresh bounded context, for the callers that
// have none; its error is the caller's to log or drop, the refresh bound
// being the net under a lost one.
func Announce(feed Feed, topic, payload string) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	return feed.Notify(ctx, topic, payload)
}
