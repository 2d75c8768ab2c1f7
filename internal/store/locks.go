package store

import (
	"context"
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
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil || !ok {
		_ = conn.Close()
		if err != nil {
			return nil, false, fmt.Errorf("lock %s: %w", name, err)
		}
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key)
			_ = conn.Close()
		})
	}, true, nil
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
