-- Runs, their hash-chained events, feedback and the agents seen.

CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    created_at        INTEGER NOT NULL,
    route             TEXT NOT NULL,
    status            TEXT NOT NULL,
    http_status       INTEGER NOT NULL,
    model             TEXT NOT NULL,
    app               TEXT NOT NULL,
    agent             TEXT NOT NULL,
    subject           TEXT NOT NULL,
    mode              TEXT NOT NULL,
    key_id            TEXT NOT NULL,
    provider          TEXT NOT NULL,
    stream            INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    total_tokens      INTEGER NOT NULL,
    usage_unknown     INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    price_unknown     INTEGER NOT NULL,
    latency_ms        REAL NOT NULL,
    explanation       TEXT NOT NULL, -- JSON route explanation
    error             TEXT NOT NULL,
    request           BLOB NOT NULL, -- chat-completions request JSON
    response          BLOB,          -- response JSON (assembled for streams)
    event_count       INTEGER NOT NULL,
    head_hash         BLOB NOT NULL
);
CREATE INDEX runs_by_tenant ON runs (tenant_id, created_at DESC); -- ties: rowid, insertion order
CREATE INDEX runs_by_route ON runs (tenant_id, route, created_at DESC);

CREATE TABLE run_events (
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    tenant_id TEXT NOT NULL,
    at        INTEGER NOT NULL,
    type      TEXT NOT NULL,
    payload   BLOB NOT NULL, -- the exact bytes hashed
    prev_hash BLOB NOT NULL,
    hash      BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rating     INTEGER NOT NULL CHECK (rating IN (-1, 1)),
    correction TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX feedback_by_run ON feedback (tenant_id, run_id);

CREATE TABLE agents (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    run_count  INTEGER NOT NULL,
    trust      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
) WITHOUT ROWID;
