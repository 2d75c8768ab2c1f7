package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The store's statements pass Go bools for flags and strings for blobs, as
// SQLite takes them; PostgreSQL's columns are BIGINT and BYTEA (the
// migrations keep one schema shape for both). These encoders let pgx write
// a bool into an integer column as 0 or 1 and a string into a bytea column
// as its bytes, so the statements stay written once. They are tried only
// for a value the column's own codec cannot take.

// teachTypes adds the encoders to a new connection's type map.
func teachTypes(_ context.Context, c *pgx.Conn) error {
	m := c.TypeMap()
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{wrapBoolAsInt, wrapStringAsBytes},
		m.TryWrapEncodePlanFuncs...)
	return nil
}

func wrapBoolAsInt(v any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if b, ok := v.(bool); ok {
		return &boolAsIntPlan{}, boolInt(b), true
	}
	return nil, nil, false
}

func wrapStringAsBytes(v any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if s, ok := v.(string); ok {
		return &stringAsBytesPlan{}, stringBytes(s), true
	}
	return nil, nil, false
}

// boolInt is a bool read as the integer 0 or 1.
type boolInt bool

func (b boolInt) Int64Value() (pgtype.Int8, error) {
	var n int64
	if b {
		n = 1
	}
	return pgtype.Int8{Int64: n, Valid: true}, nil
}

type boolAsIntPlan struct{ next pgtype.EncodePlan }

func (p *boolAsIntPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *boolAsIntPlan) Encode(v any, buf []byte) ([]byte, error) {
	return p.next.Encode(boolInt(v.(bool)), buf)
}

// stringBytes is a string read as its bytes.
type stringBytes string

func (s stringBytes) BytesValue() ([]byte, error) { return []byte(s), nil }

type stringAsBytesPlan struct{ next pgtype.EncodePlan }

func (p *stringAsBytesPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *stringAsBytesPlan) Encode(v any, buf []byte) ([]byte, error) {
	return p.next.Encode(stringBytes(v.(string)), buf)
}
