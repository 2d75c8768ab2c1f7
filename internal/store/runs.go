package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
)

var _ ledger.Store = (*Store)(nil)

// hotStatements are the statements of every recorded run: multi-row
// INSERTs (one statement execution per table per batch, not per row, which
// is most of an insert's cost), prepared once per row count on the writer
// connection and kept.
type hotStatements struct {
	mu    sync.Mutex
	stmts map[hotKey]*sql.Stmt
}

// hotKey names a kept statement: the INSERT of rows rows into table, or
// (rows 0) the statement whose text table is.
type hotKey struct {
	table string
	rows  int
}

const (
	runColumns = `id, tenant_id, created_at, route, status, http_status, model, app, agent, subject, mode, key_id,
		provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd, price_unknown,
		latency_ms, explanation, error, request, response, event_count, head_hash, saved_usd, saved_ms, ghost_saved_usd,
		chain_version, trace_id`
	runParams   = 32
	eventParams = 8
	entryParams = 8
	// Rows per statement, well under SQLite's limit of 32766 parameters.
	maxRunRows   = 64
	maxEventRows = 256
)

// stmt returns the prepared INSERT of rows rows into table.
func (h *hotStatements) stmt(ctx context.Context, db *pool, table string, rows int) (*sql.Stmt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := hotKey{table, rows}
	if st := h.stmts[k]; st != nil {
		return st, nil
	}
	if rows == 0 {
		return h.prepare(ctx, db, k, table)
	}
	var q strings.Builder
	params, suffix := runParams, ""
	switch table {
	case "runs":
		q.WriteString("INSERT INTO runs (" + runColumns + ") VALUES ")
	case "run_events":
		q.WriteString("INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash) VALUES ")
		params = eventParams
	case "ledger_entries":
		q.WriteString("INSERT INTO ledger_entries (" + entryColumns + ") VALUES ")
		params = entryParams
	case "spend_counters":
		q.WriteString("INSERT INTO spend_counters (tenant_id, scope, scope_key, period, start_ms, replica, usd, tokens, requests, hits) VALUES ")
		params, suffix = counterParams, spendUpsert
	}
	row := "(" + strings.Repeat("?, ", params-1) + "?)"
	for i := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
	}
	q.WriteString(suffix)
	return h.prepare(ctx, db, k, q.String())
}

// prepare prepares q and keeps it as k; h.mu is held.
func (h *hotStatements) prepare(ctx context.Context, db *pool, k hotKey, q string) (*sql.Stmt, error) {
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if h.stmts == nil {
		h.stmts = map[hotKey]*sql.Stmt{}
	}
	h.stmts[k] = st
	return st, nil
}

func (h *hotStatements) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, st := range h.stmts {
		_ = st.Close()
	}
	h.stmts = nil
}

// batchInsert is a multi-row INSERT of args into table, split into
// statements of at most maxRows rows.
type batchInsert struct {
	args      []any
	rowParams int
	stmts     []*sql.Stmt
	rows      []int // rows of each statement
}

// prepareInsert readies the statements of a batchInsert. It runs before the
// transaction begins: the writer's one connection is busy during it.
func (s *Store) prepareInsert(ctx context.Context, table string, rowParams, maxRows int, args []any) (*batchInsert, error) {
	b := &batchInsert{args: args, rowParams: rowParams}
	for left := len(args) / rowParams; left > 0; {
		rows := batchRows(left, maxRows)
		if table == "spend_counters" {
			rows = counterRows(left, maxRows)
		}
		st, err := s.hot.stmt(ctx, s.write, table, rows)
		if err != nil {
			return nil, err
		}
		b.stmts, b.rows = append(b.stmts, st), append(b.rows, rows)
		left -= rows
	}
	return b, nil
}

// batchRows is the rows of the next statement for left rows: the largest
// power of four up to maxRows that fits. Statements of only these sizes are
// prepared, so the set kept stays small however batch sizes vary (each
// holds its compiled program in SQLite's memory).
func batchRows(left, maxRows int) int {
	rows := 1
	for rows*4 <= min(left, maxRows) {
		rows *= 4
	}
	return rows
}

func (b *batchInsert) exec(ctx context.Context, tx *txn) error {
	args := b.args
	for i, st := range b.stmts {
		n := b.rows[i] * b.rowParams
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args[:n]...); err != nil {
			return formatError(err)
		}
		args = args[n:]
	}
	return nil
}

// InsertRuns stores runs with their events and their ledger entries, and
// counts their agents and adds them to their spend counters, in one
// transaction. On PostgreSQL it runs at READ COMMITTED: it reads nothing
// its writes depend on (rows are new, counters and agents move by atomic
// upserts, each row locked until the commit; counters in key order, so
// that two batches never wait on each other both ways), where SERIALIZABLE
// would fail concurrent batches that touch one agent's or counter's row.
func (s *Store) InsertRuns(ctx context.Context, recs []*ledger.Record) error {
	runArgs := make([]any, 0, len(recs)*runParams)
	eventArgs := make([]any, 0, len(recs)*3*eventParams)
	entryArgs := make([]any, 0, len(recs)*entryParams)
	now := any(s.nowMS()) // boxed once, for every entry
	for _, rec := range recs {
		r := rec.Run
		explanation, err := rec.ExplanationJSON()
		if err != nil {
			return err
		}
		var response any
		if r.Response != nil {
			response = []byte(r.Response)
		}
		// The values every table repeats are boxed once: each conversion
		// to any of a string or a number is an allocation. Numbers go as
		// int64, which database/sql passes on as it is (an int it converts
		// through reflection).
		id, tenantID, createdAt, count, head := any(r.ID), any(r.TenantID), any(r.CreatedAt.UnixMilli()), any(int64(rec.Head.Count)), any(rec.Head.Hash[:])
		runArgs = append(runArgs, id, tenantID, createdAt, r.Route, r.Status, int64(r.HTTPStatus),
			r.Model, r.App, r.Agent, r.Subject, r.Mode, r.KeyID, r.Provider, r.Stream, r.PromptTokens, r.CompletionTokens,
			r.TotalTokens, r.UsageUnknown, r.CostUSD, r.PriceUnknown, r.LatencyMS, explanation, r.Error,
			[]byte(r.Request), response, count, head, r.SavedUSD, r.SavedMS, r.GhostSavedUSD, int64(rec.Chain), r.TraceID)
		var at int64
		var atArg any
		for _, e := range rec.Events {
			if atArg == nil || e.At.UnixMilli() != at { // a run's events mostly share a time
				at = e.At.UnixMilli()
				atArg = at
			}
			eventArgs = append(eventArgs, id, int64(e.Seq), tenantID, atArg, e.Type, []byte(e.Payload), e.PrevHash[:], e.Hash[:])
		}
		entryArgs = append(entryArgs, tenantID, id, ledger.EntryRun, count, head, rec.Digest[:], createdAt, now)
	}
	runs, err := s.prepareInsert(ctx, "runs", runParams, maxRunRows, runArgs)
	if err != nil {
		return err
	}
	events, err := s.prepareInsert(ctx, "run_events", eventParams, maxEventRows, eventArgs)
	if err != nil {
		return err
	}
	entries, err := s.prepareInsert(ctx, "ledger_entries", entryParams, maxEventRows, entryArgs)
	if err != nil {
		return err
	}
	counters, err := s.prepareInsert(ctx, "spend_counters", counterParams, maxCounterRows, s.spendArgs(ctx, recs))
	if err != nil {
		return err
	}
	var agents agentStatements
	if slices.ContainsFunc(recs, func(rec *ledger.Record) bool { return rec.Run.Agent != "" }) {
		if agents, err = s.agentStatements(ctx); err != nil {
			return err
		}
	}
	return s.lockedTx(ctx, func(tx *txn) error {
		for _, b := range []*batchInsert{runs, events, counters} {
			if err := b.exec(ctx, tx); err != nil {
				return err
			}
		}
		for _, rec := range recs {
			if rec.Run.Agent != "" {
				if err := agents.see(ctx, tx, rec); err != nil {
					return err
				}
			}
		}
		// The entries last, under the ledger's lock (see ledgerLock).
		if err := s.xactLock(ctx, tx, ledgerLock); err != nil {
			return err
		}
		return entries.exec(ctx, tx)
	})
}

// RestoreRuns stores those of recs not stored yet, each on its own: a
// journal replayed after a crash may hold runs that reached the database
// just before it. A run already stored is left as it is (its trace may have
// grown since), and its agent is not counted twice.
func (s *Store) RestoreRuns(ctx context.Context, recs []*ledger.Record) error {
	for _, rec := range recs {
		var one int
		err := s.write.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, rec.Run.ID).Scan(&one)
		if err == nil {
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := s.InsertRuns(ctx, []*ledger.Record{rec}); err != nil {
			return fmt.Errorf("restore run %s: %w", rec.Run.ID, err)
		}
	}
	return nil
}

const (
	// seeAgentSQL counts a run of an agent, meeting it if need be.
	seeAgentSQL = `INSERT INTO agents (tenant_id, name, first_seen, last_seen, run_count, trust)
		VALUES (?, ?, ?, ?, 1, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET run_count = agents.run_count + 1,
			last_seen = CASE WHEN excluded.last_seen > agents.last_seen THEN excluded.last_seen ELSE agents.last_seen END`
	// takeStandingSQL stores a standing unless the stored one counts more
	// decisions: standings arrive by two paths (a run's batch, a traced
	// tool call's verdict at once), not always in the order reached.
	takeStandingSQL = `UPDATE agents SET trust = ?, allow_streak = ?, deny_count = ?, decisions = ?
		WHERE tenant_id = ? AND name = ? AND decisions <= ?`
)

// agentStatements are the recorder's statements of the runs of agents,
// prepared once like its INSERTs: text executed afresh is compiled each
// time, most of what counting an agent's run would cost.
type agentStatements struct{ count, take *sql.Stmt }

// agentStatements readies them, before the transaction begins (see
// prepareInsert).
func (s *Store) agentStatements(ctx context.Context) (agentStatements, error) {
	count, err := s.hot.stmt(ctx, s.write, seeAgentSQL, 0)
	if err != nil {
		return agentStatements{}, err
	}
	take, err := s.hot.stmt(ctx, s.write, takeStandingSQL, 0)
	return agentStatements{count, take}, err
}

// see counts a run of the agent, and takes the standing the run's verdicts
// left it in, when the run carries one.
func (a agentStatements) see(ctx context.Context, tx *txn, rec *ledger.Record) error {
	r := rec.Run
	at := r.CreatedAt.UnixMilli()
	_, err := tx.StmtContext(ctx, a.count).ExecContext(ctx, r.TenantID, r.Agent, at, at, ledger.DefaultTrust)
	if err != nil || rec.Standing == nil {
		return err
	}
	_, err = tx.StmtContext(ctx, a.take).ExecContext(ctx, standingArgs(r.TenantID, r.Agent, *rec.Standing)...)
	return err
}

// takeStanding stores st as the agent's standing unless the stored one
// counts more decisions (takeStandingSQL).
func takeStanding(ctx context.Context, tx *txn, tenantID, name string, st ledger.Standing) error {
	_, err := tx.ExecContext(ctx, takeStandingSQL, standingArgs(tenantID, name, st)...)
	return err
}

// standingArgs are takeStandingSQL's arguments.
func standingArgs(tenantID, name string, st ledger.Standing) []any {
	return []any{st.Trust, st.AllowStreak, st.Denies, st.Decisions, tenantID, name, st.Decisions}
}

// AgentStanding returns what the agent's trust is computed from; false
// when svc has not met the agent.
func (s *Store) AgentStanding(ctx context.Context, tenantID, name string) (ledger.Standing, bool, error) {
	var st ledger.Standing
	err := s.read.QueryRowContext(ctx, `SELECT trust, allow_streak, deny_count, decisions FROM agents
		WHERE tenant_id = ? AND name = ?`, tenantID, name).Scan(&st.Trust, &st.AllowStreak, &st.Denies, &st.Decisions)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.NewStanding(), false, nil
	}
	return st, err == nil, err
}

// SaveAgentStanding stores an agent's standing outside a run (a verdict on
// a traced tool call), meeting the agent if need be, unless a later
// standing is stored already.
func (s *Store) SaveAgentStanding(ctx context.Context, tenantID, name string, st ledger.Standing, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO agents (tenant_id, name, first_seen, last_seen, run_count, trust)
			VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (tenant_id, name) DO NOTHING`,
			tenantID, name, at.UnixMilli(), at.UnixMilli(), ledger.DefaultTrust)
		if err == nil {
			err = takeStanding(ctx, tx, tenantID, name, st)
		}
		return formatError(err)
	})
}

// MoveAgentStanding moves the agent's standing by one policy decision
// ("allow", "deny" or any other), meeting the agent if need be, and returns
// the standing it moved to: ledger.Standing.After, applied in the database
// so that replicas sharing it move one standing. It is one statement, an
// upsert whose update reads the row it locks (at READ COMMITTED on
// PostgreSQL a concurrent move waits for the lock and then moves the
// committed row), so concurrent moves of one agent each count once.
func (s *Store) MoveAgentStanding(ctx context.Context, tenantID, name, decision string, at time.Time) (ledger.Standing, error) {
	first := ledger.NewStanding().After(decision)
	var st ledger.Standing
	err := s.write.QueryRowContext(ctx, `INSERT INTO agents (tenant_id, name, first_seen, last_seen, run_count, trust,
			allow_streak, deny_count, decisions)
		VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET `+standingMove(decision)+`
		RETURNING trust, allow_streak, deny_count, decisions`,
		tenantID, name, at.UnixMilli(), at.UnixMilli(), first.Trust, first.AllowStreak, first.Denies, first.Decisions,
	).Scan(&st.Trust, &st.AllowStreak, &st.Denies, &st.Decisions)
	if err != nil {
		return ledger.NewStanding(), formatError(err)
	}
	return st, nil
}

// standingMove is the SET clause that moves a stored standing by decision
// as ledger.Standing.After does; each right-hand side reads the row as it
// was. TestMoveAgentStandingIsAfter holds the two to the same moves.
func standingMove(decision string) string {
	switch decision {
	case "allow":
		return allowMove
	case "deny":
		return denyMove
	}
	return heldMove
}

var (
	// restores: a restricted agent's allowed call that ends its penance.
	restores  = fmt.Sprintf(`agents.trust = '%s' AND agents.allow_streak + 1 >= %d`, ledger.TrustRestricted, ledger.RestoreAfter)
	allowMove = fmt.Sprintf(`decisions = agents.decisions + 1,
		trust = CASE WHEN agents.trust = '%s' AND agents.allow_streak + 1 >= %d THEN '%s'
			WHEN %s THEN '%s' ELSE agents.trust END,
		allow_streak = CASE WHEN %s THEN 0 ELSE agents.allow_streak + 1 END,
		deny_count = CASE WHEN %s THEN 0 ELSE agents.deny_count END`,
		ledger.TrustUnverified, ledger.TrustAfter, ledger.TrustTrusted, restores, ledger.TrustUnverified, restores, restores)
	denyMove = fmt.Sprintf(`decisions = agents.decisions + 1, allow_streak = 0, deny_count = agents.deny_count + 1,
		trust = CASE WHEN agents.deny_count + 1 >= %d THEN '%s' WHEN agents.trust = '%s' THEN '%s' ELSE agents.trust END`,
		ledger.RestrictAfter, ledger.TrustRestricted, ledger.TrustTrusted, ledger.TrustUnverified)
	heldMove = `decisions = agents.decisions + 1, allow_streak = 0`
)

const runListColumns = runListColumns19 + `, trace_id`

// runListColumns19 are runListColumns as of migration 0019, for the step of
// an older migration that reads runs (their trace id reads empty).
const runListColumns19 = `id, created_at, route, status, http_status, model, app, agent, subject, mode, key_id, provider,
	stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd, price_unknown, latency_ms,
	explanation, error, event_count, saved_usd, saved_ms, ghost_saved_usd`

func scanRun(row scanner, extra ...any) (ledger.Run, error) {
	r, _, err := scanRunExplained(row, extra...)
	return r, err
}

// scanRunExplained is scanRun that also returns the route explanation's
// JSON as stored, the bytes a run's digest covers.
func scanRunExplained(row scanner, extra ...any) (ledger.Run, []byte, error) {
	var (
		r           ledger.Run
		created     int64
		explanation []byte
	)
	dest := append([]any{&r.ID, &created, &r.Route, &r.Status, &r.HTTPStatus, &r.Model, &r.App, &r.Agent, &r.Subject,
		&r.Mode, &r.KeyID, &r.Provider, &r.Stream, &r.PromptTokens, &r.CompletionTokens, &r.TotalTokens,
		&r.UsageUnknown, &r.CostUSD, &r.PriceUnknown, &r.LatencyMS, &explanation, &r.Error, &r.EventCount,
		&r.SavedUSD, &r.SavedMS, &r.GhostSavedUSD, &r.TraceID}, extra...)
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, nil, errs.NotFoundf("run not found")
		}
		return r, nil, err
	}
	r.CreatedAt = msTime(created)
	if err := json.Unmarshal(explanation, &r.Explanation); err != nil {
		return r, nil, fmt.Errorf("decode explanation of %s: %w", r.ID, err)
	}
	return r, explanation, nil
}

// Run returns the tenant's run with its request and response.
func (s *Store) Run(ctx context.Context, tenantID, id string) (ledger.Run, error) {
	r, _, _, err := readRun(ctx, s.read, tenantID, id)
	return r, err
}

// readRun reads the tenant's run with its request and response, the
// stored explanation and its chain version.
func readRun(ctx context.Context, q querier, tenantID, id string) (ledger.Run, []byte, int, error) {
	return readRunColumns(ctx, q, runListColumns, tenantID, id)
}

// readRunColumns is readRun with the run's columns given: an unmigrated
// database's, without the trace id.
func readRunColumns(ctx context.Context, q querier, columns, tenantID, id string) (ledger.Run, []byte, int, error) {
	var (
		req, res []byte
		chain    int
	)
	r, explanation, err := scanRunExplained(q.QueryRowContext(ctx, `SELECT `+columns+`, request, response, chain_version
		FROM runs WHERE tenant_id = ? AND id = ?`, tenantID, id), &req, &res, &chain)
	if err != nil {
		return r, nil, 0, err
	}
	r.TenantID = tenantID
	r.Request = json.RawMessage(req)
	if res != nil {
		r.Response = json.RawMessage(res)
	}
	return r, explanation, chain, nil
}

// querier is what a read runs on: the read pool or one of its
// transactions.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// RunChain returns the tenant's run as stored with its events and head,
// from one read transaction, so that an event appended meanwhile is seen
// whole or not at all.
func (s *Store) RunChain(ctx context.Context, tenantID, id string) (ledger.StoredRun, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ledger.StoredRun{}, err
	}
	defer func() { _ = tx.Rollback() }()
	return ledgerReader{q: tx}.RunChain(ctx, tenantID, id)
}

// ListRuns returns a page of the tenant's runs, newest first, and the total.
func (s *Store) ListRuns(ctx context.Context, tenantID string, f ledger.Filter) ([]ledger.Run, int, error) {
	where, args := runsWhere(tenantID, f)
	if f.Q != "" {
		return s.searchRuns(ctx, tenantID, f, where, args)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+runListColumns+` FROM runs`+where+
		` ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	runs, _, err := scanRuns(rows, tenantID, false)
	return runs, total, err
}

// RunsByID returns the tenant's runs among ids, as a listing shows them
// (without request and answer), oldest first: the runs another replica
// stored, for the live streams here. An id of another tenant's run, or of
// none, reads nothing.
func (s *Store) RunsByID(ctx context.Context, tenantID string, ids []string) ([]ledger.Run, error) {
	runs := []ledger.Run{}
	err := tenantIDChunks(tenantID, ids, func(args []any, in string) error {
		rows, err := s.read.QueryContext(ctx, `SELECT `+runListColumns+` FROM runs WHERE tenant_id = ? AND id IN (`+in+`)
			ORDER BY created_at, rowid`, args...)
		if err != nil {
			return err
		}
		some, _, err := scanRuns(rows, tenantID, false)
		runs = append(runs, some...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// idChunk bounds the ids one statement lists, well under either engine's
// limit on a statement's parameters.
const idChunk = 500

// tenantIDChunks calls fn for the tenant's ids a chunk at a time, with its
// arguments (the tenant, then the chunk's ids) and the chunk's
// placeholders ("?, ?, …" for an IN list).
func tenantIDChunks(tenantID string, ids []string, fn func(args []any, in string) error) error {
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(len(ids), start+idChunk)]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, tenantID)
		for _, id := range chunk {
			args = append(args, id)
		}
		if err := fn(args, strings.Repeat("?, ", len(chunk)-1)+"?"); err != nil {
			return err
		}
	}
	return nil
}

// searchRuns is ListRuns with a search: among the SearchWindow newest runs
// that match the rest of the filter, those whose id, model, app, agent,
// request or answer holds the text, ASCII letters folded. instr finds the
// text as it is, with no wildcard to escape (LIKE would read % and _ in
// it), and one pass reads the window, counting the matches beside the page.
func (s *Store) searchRuns(ctx context.Context, tenantID string, f ledger.Filter, where string, args []any) ([]ledger.Run, int, error) {
	q := asciiLower(f.Q)
	body := q // the text as the bodies' condition reads them
	if s.engine == Postgres {
		body = byteaEscape(q)
	}
	where += ` AND rowid IN (SELECT rowid FROM runs` + where + ` ORDER BY created_at DESC, rowid DESC LIMIT ?)` +
		s.sql(searchSQLite, searchPostgres)
	args = append(append(args, args...), ledger.SearchWindow, q, q, q, q, body, body)
	rows, err := s.read.QueryContext(ctx, `SELECT `+runListColumns+`, COUNT(*) OVER () FROM runs`+where+
		` ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	runs, total, err := scanRuns(rows, tenantID, true)
	if err != nil || len(runs) > 0 || f.Offset == 0 {
		return runs, total, err
	}
	// A page past the end has no row to carry the count.
	err = s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`+where, args...).Scan(&total)
	return runs, total, err
}

// searchSQLite and searchPostgres are the condition of searchRuns on each
// engine; each ? is the folded text. PostgreSQL reads a body in its escape
// form (encode(…, 'escape'): NUL and bytes of the high bit as \ooo, \ as
// \\, the rest as is), which any bytes have, where reading them as UTF-8
// fails on one stored body that is not; the text is matched in the same
// form (byteaEscape), so both engines match bytes, ASCII letters folded.
const (
	searchSQLite = ` AND (instr(lower(id), ?) > 0 OR instr(lower(model), ?) > 0 OR instr(lower(app), ?) > 0
		OR instr(lower(agent), ?) > 0 OR instr(lower(CAST(request AS TEXT)), ?) > 0
		OR instr(lower(CAST(response AS TEXT)), ?) > 0)`
	searchPostgres = ` AND (strpos(lower(id), ?) > 0 OR strpos(lower(model), ?) > 0 OR strpos(lower(app), ?) > 0
		OR strpos(lower(agent), ?) > 0 OR strpos(lower(encode(request, 'escape')), ?) > 0
		OR strpos(lower(encode(response, 'escape')), ?) > 0)`
)

// byteaEscape is s as PostgreSQL's encode(…, 'escape') writes its bytes.
func byteaEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == 0 || c >= 0x80:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// scanRuns reads listed runs, and with counted the total each row carries
// last.
func scanRuns(rows *sql.Rows, tenantID string, counted bool) ([]ledger.Run, int, error) {
	defer rows.Close()
	runs := []ledger.Run{}
	total := 0
	var extra []any
	if counted {
		extra = []any{&total}
	}
	for rows.Next() {
		r, err := scanRun(rows, extra...)
		if err != nil {
			return nil, 0, err
		}
		r.TenantID = tenantID
		runs = append(runs, r)
	}
	return runs, total, rows.Err()
}

// asciiLower folds ASCII letters only, as SQLite's lower does.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// runsWhere is the WHERE clause of the tenant's runs that match f's
// fields, all but its search, and its arguments.
func runsWhere(tenantID string, f ledger.Filter) (string, []any) {
	where := ` WHERE tenant_id = ?`
	args := []any{tenantID}
	for _, c := range []struct{ column, v string }{
		{"route", f.Route}, {"status", f.Status}, {"app", f.App}, {"agent", f.Agent}, {"model", f.Model},
	} {
		if c.v != "" {
			where += ` AND ` + c.column + ` = ?`
			args = append(args, c.v)
		}
	}
	if f.TraceID != "" {
		// The index on trace ids holds only runs that have one: the term
		// that says so lets SQLite use it.
		where += ` AND trace_id = ? AND trace_id <> ''`
		args = append(args, f.TraceID)
	}
	if !f.Since.IsZero() {
		where += ` AND created_at >= ?`
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		where += ` AND created_at < ?`
		args = append(args, f.Until.UnixMilli())
	}
	return where, args
}

// RunEvents returns the run's events in order and the head its row
// records, from one read transaction.
func (s *Store) RunEvents(ctx context.Context, tenantID, runID string) ([]ledger.Event, ledger.Head, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ledger.Head{}, err
	}
	defer func() { _ = tx.Rollback() }()
	return runEvents(ctx, tx, tenantID, runID)
}

func runEvents(ctx context.Context, q querier, tenantID, runID string) ([]ledger.Event, ledger.Head, error) {
	var head ledger.Head
	var headHash []byte
	err := q.QueryRowContext(ctx, `SELECT event_count, head_hash FROM runs WHERE tenant_id = ? AND id = ?`,
		tenantID, runID).Scan(&head.Count, &headHash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, head, errs.NotFoundf("run not found")
	}
	if err != nil {
		return nil, head, err
	}
	copy(head.Hash[:], headHash)
	rows, err := q.QueryContext(ctx, `SELECT seq, at, type, payload, prev_hash, hash FROM run_events
		WHERE tenant_id = ? AND run_id = ? ORDER BY seq`, tenantID, runID)
	if err != nil {
		return nil, head, err
	}
	defer rows.Close()
	events := []ledger.Event{}
	for rows.Next() {
		var (
			e              ledger.Event
			at             int64
			payload        []byte
			prevHash, hash []byte
		)
		if err := rows.Scan(&e.Seq, &at, &e.Type, &payload, &prevHash, &hash); err != nil {
			return nil, head, err
		}
		e.At = msTime(at)
		e.Payload = json.RawMessage(payload)
		copy(e.PrevHash[:], prevHash)
		copy(e.Hash[:], hash)
		events = append(events, e)
	}
	return events, head, rows.Err()
}

// appendHeadSQL reads the chain an appended event extends.
const appendHeadSQL = `SELECT event_count, head_hash, created_at FROM runs WHERE tenant_id = ? AND id = ?`

// AppendEvent appends an event to the tenant's run, linking it to the head
// recorded on the run row, with the ledger entry of the run's new head,
// inside the single writer's transaction so that concurrent appends
// serialize.
func (s *Store) AppendEvent(ctx context.Context, tenantID, runID, typ string, at time.Time, payload json.RawMessage) (ledger.Event, error) {
	var e ledger.Event
	err := s.lockedTx(ctx, func(tx *txn) error {
		var count int
		var created int64
		var headHash []byte
		// On PostgreSQL the row lock makes a concurrent append wait and
		// then read the head the first one left.
		err := tx.QueryRowContext(ctx, s.sql(appendHeadSQL, appendHeadSQL+` FOR UPDATE`),
			tenantID, runID).Scan(&count, &headHash, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.NotFoundf("run not found")
		}
		if err != nil {
			return err
		}
		e = ledger.Event{Seq: count, Type: typ, At: at.UTC().Truncate(time.Millisecond), Payload: payload}
		copy(e.PrevHash[:], headHash)
		e.Hash = ledger.Link(e.PrevHash, &e)
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, runID, e.Seq, tenantID, e.At.UnixMilli(), e.Type, []byte(e.Payload),
			e.PrevHash[:], e.Hash[:]); err != nil {
			return formatError(err)
		}
		if _, err = tx.ExecContext(ctx, `UPDATE runs SET event_count = ?, head_hash = ? WHERE tenant_id = ? AND id = ?`,
			count+1, e.Hash[:], tenantID, runID); err != nil {
			return err
		}
		return s.addEntry(ctx, tx, ledger.Entry{TenantID: tenantID, RunID: runID, Kind: ledger.EntryEvent,
			EventCount: count + 1, Head: e.Hash, RunAt: msTime(created)})
	})
	return e, err
}

// AddFeedback stores f.
func (s *Store) AddFeedback(ctx context.Context, f *ledger.Feedback) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO feedback (id, tenant_id, run_id, rating, correction, created_at)
			SELECT ?, ?, id, ?, ?, ? FROM runs WHERE tenant_id = ? AND id = ?`,
			f.ID, f.TenantID, f.Rating, f.Correction, f.CreatedAt.UnixMilli(), f.TenantID, f.RunID)
		return formatError(err)
	})
}

// ListAgents returns the tenant's agents, most recently seen first.
func (s *Store) ListAgents(ctx context.Context, tenantID string) ([]ledger.Agent, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT name, first_seen, last_seen, run_count, trust FROM agents
		WHERE tenant_id = ? ORDER BY last_seen DESC, name`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	agents := []ledger.Agent{}
	for rows.Next() {
		var a ledger.Agent
		var first, last int64
		if err := rows.Scan(&a.Name, &first, &last, &a.RunCount, &a.Trust); err != nil {
			return nil, err
		}
		a.FirstSeen, a.LastSeen = msTime(first), msTime(last)
		agents = append(agents, a)
	}
	return agents, rows.Err()
}

// DeleteRunsBefore deletes the tenant's runs created before t, with their
// events, feedback and side effects, a thousand at a time so that other
// writers wait little. It returns how many runs went. Each batch that
// deletes any writes a prune entry to the ledger in its transaction, so
// that every run the sweep deletes is known as pruned, not lost, even when
// the sweep stops between batches.
func (s *Store) DeleteRunsBefore(ctx context.Context, tenantID string, t time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.tx(ctx, func(tx *txn) error {
			n = 0 // not an earlier attempt's
			res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE rowid IN (SELECT rowid FROM runs
				WHERE tenant_id = ? AND created_at < ? LIMIT 1000)`, tenantID, t.UnixMilli())
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil || n == 0 {
				return err
			}
			return s.addEntry(ctx, tx, ledger.Entry{TenantID: tenantID, Kind: ledger.EntryPrune, RunAt: t})
		})
		total += int(n)
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, s.deleteRecordsBefore(ctx, tenantID, t)
		}
	}
}

// deleteRecordsBefore deletes the tenant's other records older than t
// under the same retention: web snapshots and fetches (page content), the
// learning loop's evaluation rows (an artifact keeps its counters) and
// learning reports; and, whatever the tenant's retention, its spend
// counters and budget alerts of windows that started more than
// spendRetention ago.
func (s *Store) deleteRecordsBefore(ctx context.Context, tenantID string, t time.Time) error {
	spendCutoff := s.Now().Add(-spendRetention)
	return s.tx(ctx, func(tx *txn) error {
		if err := deleteSpendBefore(ctx, tx, tenantID, spendCutoff); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM web_snapshots WHERE tenant_id = ? AND created_at < ?`,
			`DELETE FROM web_fetches WHERE tenant_id = ? AND at < ?`,
			`DELETE FROM artifact_evaluations WHERE tenant_id = ? AND created_at < ?`,
			`DELETE FROM learning_reports WHERE tenant_id = ? AND created_at < ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, tenantID, t.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
}
