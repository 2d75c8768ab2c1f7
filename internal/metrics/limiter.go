package metrics

import (
	"sync"
	"sync/atomic"
)

// Limiter keeps a free-form label bounded: the first limit distinct values
// it sees pass as they are, every later one is Other. A value seen once is
// looked up without a lock.
type Limiter struct {
	limit int64
	n     atomic.Int64
	seen  sync.Map // string → struct{}
	mu    sync.Mutex
}

// NewLimiter returns a limiter of limit distinct values.
func NewLimiter(limit int) *Limiter { return &Limiter{limit: int64(limit)} }

// Value is v, or Other once limit other values were seen. The empty value
// passes as it is.
func (l *Limiter) Value(v string) string {
	if v == "" {
		return v
	}
	if _, ok := l.seen.Load(v); ok {
		return v
	}
	if l.n.Load() >= l.limit {
		return Other
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen.Load(v); ok {
		return v
	}
	if l.n.Load() >= l.limit {
		return Other
	}
	l.seen.Store(v, struct{}{})
	l.n.Add(1)
	return v
}

// Known is v if it was already admitted, else Other; it never admits v.
// It is for values a client can make up (a call refused before any
// provider answered), which must not use up the limit.
func (l *Limiter) Known(v string) string {
	if v == "" {
		return v
	}
	if _, ok := l.seen.Load(v); ok {
		return v
	}
	return Other
}
