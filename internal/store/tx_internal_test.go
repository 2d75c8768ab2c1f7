package store

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/pgtest"
)

// A transaction that loses every attempt to concurrent writers ends as
// errs.Unavailable, a 503 to try again, not an internal error.
func TestTxLosingEveryAttemptIsUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	s, err := Open(ctx, srv.CreateDatabase(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	calls := 0
	err = s.tx(ctx, func(*txn) error {
		calls++
		return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	})
	if calls != maxTxAttempts {
		t.Errorf("ran %d times, want %d", calls, maxTxAttempts)
	}
	if !errs.Is(err, errs.Unavailable) || errs.Code(err) != "database_busy" {
		t.Errorf("got %v (kind %v, code %s), want unavailable database_busy", err, errs.KindOf(err), errs.Code(err))
	}
}
