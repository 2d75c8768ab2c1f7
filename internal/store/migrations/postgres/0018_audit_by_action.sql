-- The audit trail filtered by action and time: GET /api/v1/audit?action=,
-- and the policy verdicts of the last day that a rule's match counts and
-- its recent verdicts read (internal/governance, verdicts.go).
CREATE INDEX audit_events_by_action ON audit_events (tenant_id, action, at);
