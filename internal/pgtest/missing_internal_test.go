package pgtest

import "testing"

// outcome records how missing ends a test, in place of ending it.
type outcome struct {
	testing.TB
	skipped, failed bool
}

func (o *outcome) Helper()               {}
func (o *outcome) Skipf(string, ...any)  { o.skipped = true }
func (o *outcome) Fatalf(string, ...any) { o.failed = true }

// Without PostgreSQL a test skips, unless SVC_TEST_DB=postgres asked for
// it: then it fails, so that such a run cannot pass without PostgreSQL.
func TestMissingPostgresFailsWhereAskedFor(t *testing.T) {
	t.Setenv("SVC_TEST_DB", "")
	o := &outcome{TB: t}
	missing(o, ErrMissing)
	if !o.skipped || o.failed {
		t.Errorf("without SVC_TEST_DB: skipped %v, failed %v; want a skip", o.skipped, o.failed)
	}
	t.Setenv("SVC_TEST_DB", "postgres")
	o = &outcome{TB: t}
	missing(o, ErrMissing)
	if o.skipped || !o.failed {
		t.Errorf("with SVC_TEST_DB=postgres: skipped %v, failed %v; want a failure", o.skipped, o.failed)
	}
}
