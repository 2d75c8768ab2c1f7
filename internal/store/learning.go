package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

var _ learning.Store = (*Store)(nil)

// ScanRuns calls fn with each of the tenant's successful runs, oldest
// first, one row at a time.
func (s *Store) ScanRuns(ctx context.Context, tenantID string, fn func(*learning.RunRecord) error) error {
	rows, err := s.read.QueryContext(ctx, `SELECT id, app, mode, route, request, response, cost_usd, latency_ms, created_at
		FROM runs WHERE tenant_id = ? AND status = 'ok' ORDER BY created_at, rowid`, tenantID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var r learning.RunRecord
	for rows.Next() {
		var created int64
		if err := rows.Scan(&r.ID, &r.App, &r.Mode, &r.Route, &r.Request, &r.Response, &r.CostUSD, &r.LatencyMS, &created); err != nil {
			return err
		}
		r.CreatedAt = msTime(created)
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// LearningRuns returns the tenant's successful runs among ids.
func (s *Store) LearningRuns(ctx context.Context, tenantID string, ids []string) ([]learning.RunRecord, error) {
	out := []learning.RunRecord{}
	err := tenantIDChunks(tenantID, ids, func(args []any, in string) error {
		rows, err := s.read.QueryContext(ctx, `SELECT id, app, mode, route, request, response, cost_usd, latency_ms, created_at
			FROM runs WHERE tenant_id = ? AND status = 'ok' AND id IN (`+in+`) ORDER BY created_at`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r learning.RunRecord
			var created int64
			if err := rows.Scan(&r.ID, &r.App, &r.Mode, &r.Route, &r.Request, &r.Response, &r.CostUSD, &r.LatencyMS, &created); err != nil {
				return err
			}
			r.CreatedAt = msTime(created)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Feedback returns the latest rating of each rated run of the tenant.
func (s *Store) Feedback(ctx context.Context, tenantID string) (map[string]learning.RunFeedback, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT run_id, rating, correction FROM feedback WHERE tenant_id = ?
		ORDER BY created_at, rowid`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]learning.RunFeedback{}
	for rows.Next() {
		var id string
		var f learning.RunFeedback
		if err := rows.Scan(&id, &f.Rating, &f.Correction); err != nil {
			return nil, err
		}
		out[id] = f
	}
	return out, rows.Err()
}

// ListPatterns returns the tenant's patterns, most optimizable first.
func (s *Store) ListPatterns(ctx context.Context, tenantID string) ([]synth.Pattern, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, key, state, data, created_at, updated_at FROM patterns
		WHERE tenant_id = ? ORDER BY optimizable DESC, id`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []synth.Pattern{}
	for rows.Next() {
		p, err := scanPattern(rows, tenantID)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Pattern returns one of the tenant's patterns.
func (s *Store) Pattern(ctx context.Context, tenantID, id string) (synth.Pattern, error) {
	row := s.read.QueryRowContext(ctx, `SELECT id, key, state, data, created_at, updated_at FROM patterns
		WHERE tenant_id = ? AND id = ?`, tenantID, id)
	p, err := scanPattern(row, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return synth.Pattern{}, errs.NotFoundf("pattern not found")
	}
	return p, err
}

func scanPattern(sc scanner, tenantID string) (synth.Pattern, error) {
	var (
		p                synth.Pattern
		id, key, state   string
		data             string
		created, updated int64
	)
	if err := sc.Scan(&id, &key, &state, &data, &created, &updated); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return p, err
	}
	p.ID, p.TenantID, p.Key, p.State, p.CreatedAt, p.UpdatedAt = id, tenantID, key, state, msTime(created), msTime(updated)
	return p, nil
}

// SavePatterns inserts or updates the tenant's patterns by id.
func (s *Store) SavePatterns(ctx context.Context, tenantID string, ps []synth.Pattern) error {
	if len(ps) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *txn) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO patterns (id, tenant_id, key, state, optimizable, data, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET state = excluded.state, optimizable = excluded.optimizable, data = excluded.data,
				updated_at = excluded.updated_at WHERE patterns.tenant_id = excluded.tenant_id`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i := range ps {
			p := &ps[i]
			data, err := json.Marshal(p)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, p.ID, tenantID, p.Key, p.State, p.OptimizableScore, string(data),
				p.CreatedAt.UnixMilli(), p.UpdatedAt.UnixMilli()); err != nil {
				return formatError(err)
			}
		}
		return nil
	})
}

const artifactColumns = `id, tenant_id, pattern_id, state, state_reason, type, representation, provenance, side_effects,
	replay_pass, replay_fail, shadow_pass, shadow_fail, live_pass, live_fail, abstentions, created_at, updated_at, promoted_at`

func scanArtifact(sc scanner) (synth.Artifact, error) {
	var (
		a                synth.Artifact
		rep, prov        string
		created, updated int64
		promoted         sql.NullInt64
	)
	err := sc.Scan(&a.ID, &a.TenantID, &a.PatternID, &a.State, &a.StateReason, &a.Type, &rep, &prov, &a.SideEffects,
		&a.ReplayPass, &a.ReplayFail, &a.ShadowPass, &a.ShadowFail, &a.LivePass, &a.LiveFail, &a.Abstentions,
		&created, &updated, &promoted)
	if err != nil {
		return a, err
	}
	a.Representation = json.RawMessage(rep)
	if err := json.Unmarshal([]byte(prov), &a.Provenance); err != nil {
		return a, err
	}
	a.CreatedAt, a.UpdatedAt, a.PromotedAt = msTime(created), msTime(updated), msTimePtr(promoted)
	a.Refresh()
	return a, nil
}

// ListArtifacts returns the tenant's artifacts, newest first; of one
// pattern when patternID is not empty.
func (s *Store) ListArtifacts(ctx context.Context, tenantID, patternID string) ([]synth.Artifact, error) {
	q := `SELECT ` + artifactColumns + ` FROM artifacts WHERE tenant_id = ?`
	args := []any{tenantID}
	if patternID != "" {
		q += ` AND pattern_id = ?`
		args = append(args, patternID)
	}
	rows, err := s.read.QueryContext(ctx, q+` ORDER BY created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []synth.Artifact{}
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Artifact returns one of the tenant's artifacts.
func (s *Store) Artifact(ctx context.Context, tenantID, id string) (synth.Artifact, error) {
	return artifactBy(ctx, s.read, tenantID, id)
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func artifactBy(ctx context.Context, q queryRower, tenantID, id string) (synth.Artifact, error) {
	a, err := scanArtifact(q.QueryRowContext(ctx, `SELECT `+artifactColumns+` FROM artifacts WHERE tenant_id = ? AND id = ?`, tenantID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return synth.Artifact{}, errs.NotFoundf("artifact not found")
	}
	return a, err
}

// InsertArtifact stores a with its evaluations.
func (s *Store) InsertArtifact(ctx context.Context, a *synth.Artifact, evals []synth.Evaluation) error {
	prov, err := json.Marshal(a.Provenance)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *txn) error {
		var promoted sql.NullInt64
		if a.PromotedAt != nil {
			promoted = sql.NullInt64{Int64: a.PromotedAt.UnixMilli(), Valid: true}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO artifacts (`+artifactColumns+`)
			SELECT ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM patterns WHERE tenant_id = ? AND id = ?`,
			a.ID, a.TenantID, a.State, a.StateReason, a.Type, string(a.Representation), string(prov), a.SideEffects,
			a.ReplayPass, a.ReplayFail, a.ShadowPass, a.ShadowFail, a.LivePass, a.LiveFail, a.Abstentions,
			a.CreatedAt.UnixMilli(), a.UpdatedAt.UnixMilli(), promoted, a.TenantID, a.PatternID)
		if err != nil {
			return formatError(err)
		}
		return insertEvaluations(ctx, tx, a.TenantID, evals)
	})
}

func insertEvaluations(ctx context.Context, tx *txn, tenantID string, evals []synth.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO artifact_evaluations (id, tenant_id, artifact_id, kind, run_id, outcome,
		expected, got, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, e := range evals {
		if _, err := st.ExecContext(ctx, e.ID, tenantID, e.ArtifactID, e.Kind, e.RunID, e.Outcome, e.Expected, e.Got,
			e.Reason, e.CreatedAt.UnixMilli()); err != nil {
			return formatError(err)
		}
		for i := range e.Suppressed {
			// A run gone meanwhile (retention) takes its records with it.
			if err := insertSideEffect(ctx, tx, &e.Suppressed[i]); err != nil && !errs.Is(err, errs.NotFound) {
				return err
			}
		}
	}
	return nil
}

// SetArtifactState changes an artifact's state, and returns it with the
// state it had before.
func (s *Store) SetArtifactState(ctx context.Context, tenantID, id, state, reason string, at time.Time) (synth.Artifact, string, error) {
	var out synth.Artifact
	var current string
	err := s.tx(ctx, func(tx *txn) error {
		err := tx.QueryRowContext(ctx, `SELECT state FROM artifacts WHERE tenant_id = ? AND id = ?`, tenantID, id).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.NotFoundf("artifact not found")
		} else if err != nil {
			return err
		}
		// Retired is final, and nothing promotes an artifact that is not
		// in shadow or quarantine: a pass that decided on what it read
		// earlier cannot undo an operator's retirement in between.
		if current == synth.ArtifactRetired && state != synth.ArtifactRetired ||
			state == synth.ArtifactPromoted && current != synth.ArtifactShadow && current != synth.ArtifactQuarantined {
			return errs.E(errs.Conflict, "artifact_state", "the artifact is %s and cannot become %s", current, state)
		}
		res, err := tx.ExecContext(ctx, `UPDATE artifacts SET state = ?, state_reason = ?, updated_at = ?,
			promoted_at = CASE WHEN ? = 'promoted' THEN ? ELSE promoted_at END
			WHERE tenant_id = ? AND id = ?`, state, reason, at.UnixMilli(), state, at.UnixMilli(), tenantID, id)
		if err != nil {
			return err
		}
		if err := expectOne(res, "artifact not found"); err != nil {
			return err
		}
		out, err = artifactBy(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return synth.Artifact{}, "", err
	}
	return out, current, nil
}

// AddEvaluations stores evaluations of one artifact and adds their
// outcomes to its counters in one transaction.
func (s *Store) AddEvaluations(ctx context.Context, tenantID, artifactID string, evals []synth.Evaluation, at time.Time) (synth.Artifact, error) {
	var out synth.Artifact
	err := s.tx(ctx, func(tx *txn) error {
		// A replay or live verdict on a run replaces the artifact's earlier
		// one on the same run: replaying the holdout again, or rating one
		// run a thousand times, adds no evidence.
		var d, old synth.Artifact
		for _, e := range evals {
			d.Count(e.Kind, e.Outcome)
			if e.Kind != synth.EvalReplay && e.Kind != synth.EvalLive {
				continue
			}
			rows, err := tx.QueryContext(ctx, `DELETE FROM artifact_evaluations
				WHERE tenant_id = ? AND artifact_id = ? AND run_id = ? AND kind = ? RETURNING id, outcome`, tenantID, artifactID, e.RunID, e.Kind)
			if err != nil {
				return err
			}
			var replaced []string
			for rows.Next() {
				var id, outcome string
				if err := rows.Scan(&id, &outcome); err != nil {
					rows.Close()
					return err
				}
				old.Count(e.Kind, outcome)
				replaced = append(replaced, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, id := range replaced { // and the side effects it suppressed
				if _, err := tx.ExecContext(ctx, `DELETE FROM side_effects WHERE tenant_id = ? AND evaluation_id = ?`,
					tenantID, id); err != nil {
					return err
				}
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE artifacts SET replay_pass = replay_pass + ?, replay_fail = replay_fail + ?,
			shadow_pass = shadow_pass + ?, shadow_fail = shadow_fail + ?, live_pass = live_pass + ?, live_fail = live_fail + ?,
			abstentions = abstentions + ?, updated_at = ? WHERE tenant_id = ? AND id = ?`,
			d.ReplayPass-old.ReplayPass, d.ReplayFail-old.ReplayFail, d.ShadowPass, d.ShadowFail,
			d.LivePass-old.LivePass, d.LiveFail-old.LiveFail, d.Abstentions-old.Abstentions, at.UnixMilli(),
			tenantID, artifactID)
		if err != nil {
			return err
		}
		if err := expectOne(res, "artifact not found"); err != nil {
			return err
		}
		if err := insertEvaluations(ctx, tx, tenantID, evals); err != nil {
			return err
		}
		out, err = artifactBy(ctx, tx, tenantID, artifactID)
		return err
	})
	return out, err
}

// Evaluations returns an artifact's newest evaluations.
func (s *Store) Evaluations(ctx context.Context, tenantID, artifactID string, limit int) ([]synth.Evaluation, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, artifact_id, kind, run_id, outcome, expected, got, reason, created_at
		FROM artifact_evaluations WHERE tenant_id = ? AND artifact_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`,
		tenantID, artifactID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []synth.Evaluation{}
	for rows.Next() {
		e := synth.Evaluation{TenantID: tenantID}
		var created int64
		if err := rows.Scan(&e.ID, &e.ArtifactID, &e.Kind, &e.RunID, &e.Outcome, &e.Expected, &e.Got, &e.Reason, &created); err != nil {
			return nil, err
		}
		e.CreatedAt = msTime(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// InsertReport stores a learning pass's report.
func (s *Store) InsertReport(ctx context.Context, tenantID string, r *learning.Report) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO learning_reports (id, tenant_id, report, created_at) VALUES (?, ?, ?, ?)`,
			r.ID, tenantID, string(data), r.CreatedAt.UnixMilli())
		return formatError(err)
	})
}

// Reports returns the tenant's newest learning reports.
func (s *Store) Reports(ctx context.Context, tenantID string, limit int) ([]learning.Report, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT report FROM learning_reports WHERE tenant_id = ?
		ORDER BY created_at DESC, rowid DESC LIMIT ?`, tenantID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []learning.Report{}
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		var r learning.Report
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ServingArtifacts returns every tenant's shadow and promoted artifacts
// with their patterns.
func (s *Store) ServingArtifacts(ctx context.Context) ([]learning.ServingRow, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+artifactColumns+` FROM artifacts WHERE state IN ('shadow', 'promoted')`)
	if err != nil {
		return nil, err
	}
	var arts []synth.Artifact
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		arts = append(arts, a)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, err
	}
	out := make([]learning.ServingRow, 0, len(arts))
	for _, a := range arts {
		p, err := s.Pattern(ctx, a.TenantID, a.PatternID)
		if err != nil {
			return nil, err
		}
		out = append(out, learning.ServingRow{Artifact: a, Pattern: p})
	}
	return out, nil
}
