-- Approvals held by policies, side-effect records of runs, and what the
-- agents' trust is computed from.

CREATE TABLE approvals (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    target       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    run_id       TEXT NOT NULL DEFAULT '',
    request      TEXT NOT NULL, -- JSON: what was asked
    requested_by TEXT NOT NULL, -- JSON: actor, app, agent, subject
    rules        TEXT NOT NULL, -- JSON: the rules that held it
    created_at   BIGINT NOT NULL,
    decided_at   BIGINT,
    decided_by   TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    expires_at   BIGINT
);
CREATE INDEX approvals_by_tenant ON approvals (tenant_id, created_at DESC);
CREATE INDEX approvals_by_fingerprint ON approvals (tenant_id, fingerprint, status);
-- At most one pending approval per request: asking twice finds the first.
CREATE UNIQUE INDEX approvals_one_pending ON approvals (tenant_id, fingerprint) WHERE status = 'pending';

CREATE TABLE side_effects (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    tool_name   TEXT NOT NULL,
    level       BIGINT NOT NULL,
    payload     TEXT NOT NULL, -- JSON
    state       TEXT NOT NULL CHECK (state IN ('planned', 'executed', 'suppressed', 'blocked')),
    rule_id     TEXT NOT NULL DEFAULT '', -- the rule that blocked it
    reason      TEXT NOT NULL DEFAULT '',
    approval_id TEXT NOT NULL DEFAULT '',
    planned_seq BIGINT NOT NULL, -- the trace event that planned it
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX side_effects_by_run ON side_effects (tenant_id, run_id, created_at);

ALTER TABLE agents ADD COLUMN allow_streak BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN deny_count BIGINT NOT NULL DEFAULT 0;
