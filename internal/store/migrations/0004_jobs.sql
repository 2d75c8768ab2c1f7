-- The persistent job queue. Times are Unix milliseconds (UTC).

CREATE TABLE jobs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order: "newest first" and FIFO ties
    id           TEXT NOT NULL UNIQUE,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL, -- JSON
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
    last_error   TEXT NOT NULL DEFAULT '',
    run_at       INTEGER NOT NULL, -- when the next attempt may start
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
-- The workers' claim (queued and due, earliest first) and the recovery of
-- running jobs at start.
CREATE INDEX jobs_by_status ON jobs (status, run_at, seq);
-- Listings and per-state counts of one tenant.
CREATE INDEX jobs_by_tenant ON jobs (tenant_id, seq);
CREATE INDEX jobs_by_tenant_status ON jobs (tenant_id, status, seq);
