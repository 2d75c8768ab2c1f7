package store

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/tenant"
)

func TestBatchRowsSplitsIntoFewSizes(t *testing.T) {
	sizes := map[int]bool{}
	for n := 1; n <= 1000; n++ {
		total := 0
		for left := n; left > 0; {
			rows := batchRows(left, maxRunRows)
			if rows > left || rows > maxRunRows {
				t.Fatalf("batch of %d: statement of %d rows with %d left", n, rows, left)
			}
			sizes[rows] = true
			total += rows
			left -= rows
		}
		if total != n {
			t.Fatalf("batch of %d split into %d rows", n, total)
		}
	}
	if len(sizes) != 4 { // 1, 4, 16, 64
		t.Fatalf("statement sizes %v, want the four powers of four up to %d", sizes, maxRunRows)
	}
}

func TestCounterRowsTakeOneRunsCountersInOneStatement(t *testing.T) {
	sizes := map[int]bool{}
	for n := 1; n <= 1000; n++ {
		statements, total := 0, 0
		for left := n; left > 0; {
			rows := counterRows(left, maxCounterRows)
			if rows > left || rows > maxCounterRows {
				t.Fatalf("%d counters: statement of %d rows with %d left", n, rows, left)
			}
			sizes[rows] = true
			statements++
			total += rows
			left -= rows
		}
		if total != n {
			t.Fatalf("%d counters split into %d rows", n, total)
		}
		if n <= oneRunCounters && statements != 1 {
			t.Fatalf("%d counters, one run's, in %d statements", n, statements)
		}
	}
	if len(sizes) != oneRunCounters+3 { // 1 to 15, 16, 64, 256
		t.Fatalf("statement sizes %v", sizes)
	}
}

// The statements that count an agent's runs are compiled once and kept, as
// the batch INSERTs are, not compiled afresh for every run.
func TestAgentRunsUseKeptStatements(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	agentRun := func() *ledger.Record {
		at := time.Now()
		run := &ledger.Run{ID: ids.Ordered("run", at), TenantID: tenant.DefaultID, CreatedAt: at, Route: ledger.RouteBlocked,
			Status: ledger.StatusOK, Agent: "bot", Request: []byte(`{}`)}
		rec := ledger.NewRecord(run, nil, at)
		st := ledger.NewStanding().After("allow")
		rec.Standing = &st
		return rec
	}
	kept := func() map[hotKey]*sql.Stmt {
		s.hot.mu.Lock()
		defer s.hot.mu.Unlock()
		return maps.Clone(s.hot.stmts)
	}
	if err := s.InsertRuns(ctx, []*ledger.Record{agentRun(), agentRun()}); err != nil {
		t.Fatal(err)
	}
	first := kept()
	for _, q := range []string{seeAgentSQL, takeStandingSQL} {
		if first[hotKey{q, 0}] == nil {
			t.Fatalf("no statement kept for %q", q)
		}
	}
	if err := s.InsertRuns(ctx, []*ledger.Record{agentRun()}); err != nil {
		t.Fatal(err)
	}
	for k, st := range kept() {
		if k.rows == 0 && first[k] != st {
			t.Errorf("%q compiled again", k.table)
		}
	}
	if st, ok, err := s.AgentStanding(ctx, tenant.DefaultID, "bot"); err != nil || !ok || st.Decisions != 1 {
		t.Errorf("standing %+v, %v, %v", st, ok, err)
	}
	var runs int
	if err := s.read.QueryRowContext(ctx, `SELECT run_count FROM agents WHERE tenant_id = ? AND name = 'bot'`, tenant.DefaultID).Scan(&runs); err != nil || runs != 3 {
		t.Errorf("run count %d, %v; want 3", runs, err)
	}
}
