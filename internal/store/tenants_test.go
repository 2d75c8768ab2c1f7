package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

// tenantScoped lists every table of the schema with a tenant_id column: the
// tables a tenant's records live in.
func tenantScoped(t *testing.T, s *store.Store) []string {
	t.Helper()
	q := `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'tenant_id' ORDER BY m.name`
	if storetest.Postgres() {
		q = `SELECT table_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND column_name = 'tenant_id' ORDER BY table_name`
	}
	rows, err := s.DB().Query(q)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	return out
}

// insertMadeUp adds a row of made-up values to table for tenantID: every
// column that needs a value gets one of its type, distinct per tenant.
// Foreign keys and checks are off on conn, so that each table can be
// filled on its own.
func insertMadeUp(t *testing.T, conn *sql.Conn, table, tenantID string) {
	t.Helper()
	ctx := context.Background()
	q := `SELECT name, type, "notnull", dflt_value IS NOT NULL, pk FROM pragma_table_info($1)`
	if storetest.Postgres() {
		// PostgreSQL's types named as SQLite's; an identity is a default.
		q = `SELECT column_name, CASE data_type WHEN 'bigint' THEN 'INTEGER' WHEN 'double precision' THEN 'REAL'
				WHEN 'bytea' THEN 'BLOB' ELSE 'TEXT' END,
			is_nullable = 'NO', column_default IS NOT NULL OR is_identity = 'YES', 0
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1
			ORDER BY ordinal_position`
	}
	rows, err := conn.QueryContext(ctx, q, table)
	require.NoError(t, err)
	var cols []string
	var args []any
	for rows.Next() {
		var name, typ string
		var notNull, hasDefault bool
		var pk int
		require.NoError(t, rows.Scan(&name, &typ, &notNull, &hasDefault, &pk))
		switch {
		case name == "tenant_id":
			args = append(args, tenantID)
		case pk == 1 && strings.EqualFold(typ, "INTEGER"):
			continue // the rowid
		case !notNull && pk == 0, hasDefault:
			continue
		case strings.EqualFold(typ, "INTEGER"), strings.EqualFold(typ, "REAL"):
			args = append(args, 1)
		case strings.EqualFold(typ, "BLOB"):
			args = append(args, []byte(tenantID+"/"+name))
		default:
			args = append(args, tenantID+"/"+name)
		}
		cols = append(cols, name)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	marks := make([]string, len(cols))
	for i := range marks {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	q = fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, table, strings.Join(cols, ", "), strings.Join(marks, ", "))
	_, err = conn.ExecContext(ctx, q, args...)
	require.NoError(t, err, q)
}

// Deleting an organization leaves nothing of it in any table with a
// tenant_id column, today's or one a later migration adds, and leaves
// every other tenant's rows as they were.
func TestDeleteOrgEmptiesEveryTenantTable(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	gone, err := s.CreateTenant(ctx, "Gone")
	require.NoError(t, err)
	kept, err := s.CreateTenant(ctx, "Kept")
	require.NoError(t, err)
	tables := tenantScoped(t, s)
	require.Contains(t, tables, "runs")
	require.Contains(t, tables, "ledger_entries")

	conn, err := s.DB().Conn(ctx)
	require.NoError(t, err)
	off := []string{`PRAGMA foreign_keys = OFF`, `PRAGMA ignore_check_constraints = ON`}
	on := []string{`PRAGMA foreign_keys = ON`, `PRAGMA ignore_check_constraints = OFF`}
	if storetest.Postgres() {
		// Foreign keys are triggers, off in replica mode; checks cannot be
		// turned off, so this throwaway database drops them.
		off, on = []string{`SET session_replication_role = replica`}, []string{`SET session_replication_role = DEFAULT`}
		rows, err := conn.QueryContext(ctx, `SELECT conrelid::regclass::text, conname FROM pg_constraint
			WHERE contype = 'c' AND connamespace = current_schema()::regnamespace`)
		require.NoError(t, err)
		var drops []string
		for rows.Next() {
			var table, name string
			require.NoError(t, rows.Scan(&table, &name))
			drops = append(drops, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, table, name))
		}
		require.NoError(t, rows.Close())
		off = append(off, drops...)
	}
	for _, p := range off {
		_, err = conn.ExecContext(ctx, p)
		require.NoError(t, err)
	}
	for _, table := range tables {
		insertMadeUp(t, conn, table, gone.ID)
		insertMadeUp(t, conn, table, kept.ID)
	}
	for _, p := range on {
		_, err = conn.ExecContext(ctx, p)
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close())

	require.NoError(t, s.DeleteOrg(ctx, gone.ID))
	for _, table := range tables {
		q := `SELECT COUNT(*) FROM ` + table + ` WHERE tenant_id = '%s'`
		assert.Zero(t, count(t, s, fmt.Sprintf(q, gone.ID)), "%s keeps rows of the deleted tenant", table)
		assert.Equal(t, 1, count(t, s, fmt.Sprintf(q, kept.ID)), "%s lost another tenant's row", table)
	}
	_, err = s.Tenant(ctx, gone.ID)
	assert.True(t, errs.Is(err, errs.NotFound))
	assert.True(t, errs.Is(s.DeleteOrg(ctx, gone.ID), errs.NotFound), "deleted once")

	// The ledger stays append-only for a tenant that exists, and takes no
	// checkpoint for one that is gone.
	_, err = s.DB().Exec(`DELETE FROM ledger_entries WHERE tenant_id = $1`, kept.ID)
	assert.ErrorContains(t, err, "append-only")
	_, err = s.DB().Exec(`DELETE FROM ledger_checkpoints WHERE tenant_id = $1`, kept.ID)
	assert.ErrorContains(t, err, "append-only")
	_, err = s.DB().Exec(`INSERT INTO ledger_checkpoints (tenant_id, number, first_seq, last_seq, entries, root, prev_hash,
		created_at, key_id, signature) VALUES ($1, 1, 1, 1, 1, $2, $2, 1, 'k', $2)`, gone.ID, []byte{0})
	assert.ErrorContains(t, err, "deleted tenant")
}
