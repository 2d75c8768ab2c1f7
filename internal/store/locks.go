package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"sync"
)

// TryLock takes the lock called name, shared by every replica of the
// database, unless someone holds it: ok is false then, and release nil.
// Periodic work that must not run twice at once (a sweep, a round of
// checkpoints) runs only while its lock is held. On PostgreSQL it is a
// session advisory lock, held on a connection of its own until release
// (or until that connection dies); on SQLite, whose database one process
// serves, a lock of this process.
func (s *Store) TryLock(ctx context.Context, name string) (release func(), ok bool, err error) {
	if s.engine != Postgres {
		l := s.locks.get(name)
		select {
		case l <- struct{}{}:
			return func() { <-l }, true, nil
		default:
			return nil, false, nil
		}
	}
	conn, err := s.lockDB.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", name, err)
	}
	key := lockKey(name)
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		discard(conn)
		return nil, false, fmt.Errorf("lock %s: %w", name, err)
	}
	if !ok {
		_ = conn.Close()
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			releaseLock(conn, `SELECT pg_advisory_unlock($1)`, key)
		})
	}, true, nil
}

// releaseLock runs query, which releases a session advisory lock held on conn,
// and gives conn back to its pool; a lock that cannot be released ends
// with its connection, which the pool then discards instead of handing it
// on still locked.
func releaseLock(conn *sql.Conn, query string, args ...any) {
	if _, err := conn.ExecContext(context.Background(), query, args...); err != nil {
		discard(conn)
		return
	}
	_ = conn.Close()
}

// discard closes conn for good, not back into its pool: after a failed
// lock or unlock statement it may hold a lock no one will release.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// lockKey is the advisory lock's number for name: the first 63 bits of
// its FNV-1a hash, apart from migrationLock's.
func lockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("svc/" + name))
	return int64(h.Sum64() >> 1)
}

// xactLock takes the PostgreSQL advisory lock called name until tx ends;
// on SQLite, whose one writer already serializes every write transaction,
// it does nothing.
func (s *Store) xactLock(ctx context.Context, tx *txn, name string) error {
	if s.engine != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, lockKey(name))
	return err
}

// localLocks are TryLock's locks on SQLite, one per name, made on first use.
type localLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (l *localLocks) get(name string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]chan struct{}{}
	}
	c := l.m[name]
	if c == nil {
		c = make(chan struct{}, 1)
		l.m[name] = c
	}
	return c
}
