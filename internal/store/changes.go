package store

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/ids"
)

// The store is a changes.Feed: what one replica changes, the others hear of
// and drop from memory.
//
// On PostgreSQL a notification is a NOTIFY on one channel, sent once the
// change committed; each store LISTENs on a connection of its own (outside
// the pool, opened on the first Subscribe), reconnecting after a drop, and
// on every (re)connect calls each subscriber with changes.Everything, since
// what was announced while it was away is lost. On SQLite, one machine, the
// stores of one file in one process hear each other in process (there is
// normally one).
//
// A store never hears its own notifications: the replica that made a change
// has already applied it.

var _ changes.Feed = (*Store)(nil)

// changesChannel is the PostgreSQL channel every change travels on; a
// payload is "<origin> <topic> <payload>".
const changesChannel = "svc_changes"

// feedPing is how long the listener waits for a notification before it
// pings its connection: a connection left half-open by a silent network
// drop is found dead within twice this, and replaced.
const feedPing = 30 * time.Second

// feedBackoff bounds the pause between two attempts to reconnect the
// listener.
const feedBackoff = 2 * time.Second

// feed is a store's side of the change feed.
type feed struct {
	origin string // this store's name on the channel

	mu   sync.Mutex
	subs map[string][]func(string)

	conf     *pgx.ConnConfig // the listener's, on PostgreSQL
	ping     time.Duration   // feedPing; shorter in tests
	started  bool
	stop     context.CancelFunc
	done     chan struct{}
	connects atomic.Uint64
	lose     atomic.Pointer[func(topic, payload string) bool]
}

func newFeed(conf *pgx.ConnConfig) *feed {
	return &feed{origin: ids.Secret()[:16], subs: map[string][]func(string){}, conf: conf, ping: feedPing}
}

// sqliteStores are the open SQLite stores by file, which hear each other's
// changes.
var sqliteStores = struct {
	sync.Mutex
	m map[string][]*Store
}{m: map[string][]*Store{}}

func sqliteKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func (s *Store) joinSQLite() {
	k := sqliteKey(s.path)
	sqliteStores.Lock()
	sqliteStores.m[k] = append(sqliteStores.m[k], s)
	sqliteStores.Unlock()
}

func (s *Store) leaveSQLite() {
	k := sqliteKey(s.path)
	sqliteStores.Lock()
	defer sqliteStores.Unlock()
	list := sqliteStores.m[k]
	for i, o := range list {
		if o == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(sqliteStores.m, k)
	} else {
		sqliteStores.m[k] = list
	}
}

// Notify implements changes.Feed: every other store on this database hears
// that payload changed on topic. On PostgreSQL it costs one round trip
// (SELECT pg_notify); call it after the change commits.
func (s *Store) Notify(ctx context.Context, topic, payload string) error {
	if s.engine != Postgres {
		sqliteStores.Lock()
		others := append([]*Store(nil), sqliteStores.m[sqliteKey(s.path)]...)
		sqliteStores.Unlock()
		for _, o := range others {
			if o != s {
				o.changes.deliver(topic, payload)
			}
		}
		return nil
	}
	_, err := s.write.ExecContext(ctx, "SELECT pg_notify(?, ?)", changesChannel, s.changes.origin+" "+topic+" "+payload)
	return err
}

// Subscribe implements changes.Feed. On PostgreSQL the first call starts
// the listener.
func (s *Store) Subscribe(topic string, fn func(payload string)) {
	f := s.changes
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[topic] = append(f.subs[topic], fn)
	if s.engine != Postgres || f.started {
		return
	}
	f.started = true
	ctx, cancel := context.WithCancel(context.Background())
	f.stop, f.done = cancel, make(chan struct{})
	go f.listen(ctx)
}

// FeedConnects is how many times the change feed's listener has connected
// (each time, every subscriber was told changes.Everything): zero on SQLite
// and before the first Subscribe. Tests wait on it.
func (s *Store) FeedConnects() uint64 { return s.changes.connects.Load() }

// LoseChanges makes the listener drop each notification lose returns true
// for, as if it never arrived: tests of the refresh bound use it. nil
// loses none.
func (s *Store) LoseChanges(lose func(topic, payload string) bool) {
	if lose == nil {
		s.changes.lose.Store(nil)
		return
	}
	s.changes.lose.Store(&lose)
}

// closeFeed stops the listener, if it runs, and leaves the SQLite file's
// stores.
func (s *Store) closeFeed() {
	if s.changes == nil {
		return
	}
	if s.engine != Postgres {
		s.leaveSQLite()
		return
	}
	f := s.changes
	f.mu.Lock()
	stop, done := f.stop, f.done
	f.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// deliver calls topic's subscribers with payload, one change at a time.
func (f *feed) deliver(topic, payload string) {
	if lose := f.lose.Load(); lose != nil && (*lose)(topic, payload) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fn := range f.subs[topic] {
		fn(payload)
	}
}

// deliverAll tells every subscriber changes.Everything.
func (f *feed) deliverAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fns := range f.subs {
		for _, fn := range fns {
			fn(changes.Everything)
		}
	}
}

// receive delivers one notification of the channel, unless this store sent
// it.
func (f *feed) receive(raw string) {
	origin, rest, ok := strings.Cut(raw, " ")
	if !ok || origin == f.origin {
		return
	}
	topic, payload, _ := strings.Cut(rest, " ")
	f.deliver(topic, payload)
}

// listen keeps a LISTEN connection open until ctx ends, reconnecting with a
// growing pause after each failure.
func (f *feed) listen(ctx context.Context) {
	defer close(f.done)
	pause := 50 * time.Millisecond
	for {
		connected, _ := f.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			pause = 50 * time.Millisecond
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, feedBackoff)
	}
}

// listenOnce connects, listens, tells every subscriber to start over and
// delivers notifications until the connection fails. A connection quiet
// for f.ping is pinged: one that does not answer within f.ping more is
// taken for dropped (a half-open connection would otherwise wait for ever).
func (f *feed) listenOnce(ctx context.Context) (connected bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, f.conf)
	if err != nil {
		return false, err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closing)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return false, err
	}
	// Listening from here on; whatever changed before is reloaded.
	f.deliverAll()
	f.connects.Add(1)
	for {
		waiting, cancel := context.WithTimeout(ctx, f.ping)
		n, err := conn.WaitForNotification(waiting)
		cancel()
		if err != nil && ctx.Err() == nil && waiting.Err() != nil {
			// Quiet for f.ping: is the connection still there?
			pinging, cancel := context.WithTimeout(ctx, f.ping)
			err = conn.Ping(pinging)
			cancel()
			if err == nil {
				continue
			}
		}
		if err != nil {
			return true, err
		}
		if n.Channel == changesChannel {
			f.receive(n.Payload)
		}
	}
}
