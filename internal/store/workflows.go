package store

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/workflows"
)

var _ workflows.Store = (*Store)(nil)

// ListWorkflows returns the tenant's workflows, oldest first.
func (s *Store) ListWorkflows(ctx context.Context, tenantID string) ([]workflows.Workflow, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, name, template, description, definition, created_at
		FROM workflows WHERE tenant_id = ? ORDER BY created_at, name`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []workflows.Workflow{}
	for rows.Next() {
		w := workflows.Workflow{TenantID: tenantID}
		var def string
		var created int64
		if err := rows.Scan(&w.ID, &w.Name, &w.Template, &w.Description, &def, &created); err != nil {
			return nil, err
		}
		w.Definition, w.CreatedAt = []byte(def), msTime(created)
		out = append(out, w)
	}
	return out, rows.Err()
}

// SeedTenant stores, in one transaction, the workflows and agents whose
// names the tenant does not use yet, and returns the names it stored. A
// seeded agent has no runs; the first run it makes counts from there.
func (s *Store) SeedTenant(ctx context.Context, tenantID string, wfs []workflows.Workflow, agents []workflows.AgentSeed, at time.Time) (workflows.Names, error) {
	created := workflows.Names{Workflows: []string{}, Agents: []string{}}
	err := s.tx(ctx, func(tx *txn) error {
		created = workflows.Names{Workflows: []string{}, Agents: []string{}}
		for _, w := range wfs {
			res, err := tx.ExecContext(ctx, `INSERT INTO workflows (id, tenant_id, name, template, description, definition, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, name) DO NOTHING`,
				w.ID, tenantID, w.Name, w.Template, w.Description, string(w.Definition), w.CreatedAt.UnixMilli())
			if err != nil {
				return formatError(err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 {
				created.Workflows = append(created.Workflows, w.Name)
			}
		}
		for _, a := range agents {
			res, err := tx.ExecContext(ctx, `INSERT INTO agents (tenant_id, name, first_seen, last_seen, run_count, trust)
				VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (tenant_id, name) DO NOTHING`,
				tenantID, a.Name, at.UnixMilli(), at.UnixMilli(), a.Trust)
			if err != nil {
				return formatError(err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 {
				created.Agents = append(created.Agents, a.Name)
			}
		}
		return nil
	})
	return created, err
}

// OnboardingState counts the tenant's workflows and agents, and tells
// whether it has a run (the first row of its runs index answers) and has
// dismissed onboarding, in one read.
func (s *Store) OnboardingState(ctx context.Context, tenantID string) (workflows.Onboarding, error) {
	var o workflows.Onboarding
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM workflows WHERE tenant_id = ?),
		(SELECT COUNT(*) FROM agents WHERE tenant_id = ?),
		EXISTS (SELECT 1 FROM runs WHERE tenant_id = ?),
		EXISTS (SELECT 1 FROM onboarding WHERE tenant_id = ?)`,
		tenantID, tenantID, tenantID, tenantID).Scan(&o.WorkflowCount, &o.AgentCount, &o.HasRuns, &o.Dismissed)
	return o, err
}

// DismissOnboarding records that the tenant dismissed onboarding, keeping
// the first time it did.
func (s *Store) DismissOnboarding(ctx context.Context, tenantID string, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO onboarding (tenant_id, dismissed_at) VALUES (?, ?)
			ON CONFLICT (tenant_id) DO NOTHING`, tenantID, at.UnixMilli())
		return formatError(err)
	})
}
