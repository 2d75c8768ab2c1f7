package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// Engine names the database a Store runs on. The domain packages never see
// it: only the few statements whose SQL differs between the two ask
// (Store.sql).
type Engine int

const (
	// SQLite is the embedded default: one file, one machine.
	SQLite Engine = iota
	// Postgres is PostgreSQL, shared by several replicas.
	Postgres
)

func (e Engine) String() string {
	if e == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// pool is a database/sql pool whose statements are written once, with ? placeholders, for
// both engines: on PostgreSQL each is rewritten to $1, $2, … the first time
// it is seen and the rewrite kept.
type pool struct {
	*sql.DB
	binds *binds // nil on SQLite
}

// txn is a transaction of a pool, with the same rewriting.
type txn struct {
	*sql.Tx
	binds *binds
}

func (d *pool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, d.binds.rebind(q), args...)
}

func (d *pool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, d.binds.rebind(q), args...)
}

func (d *pool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.binds.rebind(q), args...)
}

func (d *pool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return d.DB.PrepareContext(ctx, d.binds.rebind(q))
}

func (d *pool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	t, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: t, binds: d.binds}, nil
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.binds.rebind(q), args...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.binds.rebind(q), args...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.binds.rebind(q), args...)
}

func (t *txn) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, t.binds.rebind(q))
}

// binds keeps each statement's PostgreSQL form. The statements are the
// store's own constants and the few shapes its filters build, so the set
// stays small.
type binds struct{ m sync.Map }

func (b *binds) rebind(q string) string {
	if b == nil {
		return q
	}
	if v, ok := b.m.Load(q); ok {
		return v.(string)
	}
	r := numberPlaceholders(q)
	b.m.Store(q, r)
	return r
}

// numberPlaceholders rewrites each ? outside a quoted string or identifier
// as $n, counting from 1.
func numberPlaceholders(q string) string {
	if strings.IndexByte(q, '?') < 0 {
		return q
	}
	var out strings.Builder
	out.Grow(len(q) + 16)
	n := 0
	var quote byte // the quote we are inside, or 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			out.WriteByte('$')
			out.WriteString(strconv.Itoa(n))
			continue
		}
		out.WriteByte(c)
	}
	return out.String()
}
