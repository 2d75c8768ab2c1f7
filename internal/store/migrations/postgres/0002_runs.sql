-- Runs, their hash-chained events, feedback and the agents seen.

CREATE TABLE runs (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    created_at        BIGINT NOT NULL,
    route             TEXT NOT NULL,
    status            TEXT NOT NULL,
    http_status       BIGINT NOT NULL,
    model             TEXT NOT NULL,
    app               TEXT NOT NULL,
    agent             TEXT NOT NULL,
    subject           TEXT NOT NULL,
    mode              TEXT NOT NULL,
    key_id            TEXT NOT NULL,
    provider          TEXT NOT NULL,
    stream            BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    total_tokens      BIGINT NOT NULL,
    usage_unknown     BIGINT NOT NULL,
    cost_usd          DOUBLE PRECISION NOT NULL,
    price_unknown     BIGINT NOT NULL,
    latency_ms        DOUBLE PRECISION NOT NULL,
    explanation       TEXT NOT NULL, -- JSON route explanation
    error             TEXT NOT NULL,
    request           BYTEA NOT NULL, -- chat-completions request JSON
    response          BYTEA,          -- response JSON (assembled for streams)
    event_count       BIGINT NOT NULL,
    head_hash         BYTEA NOT NULL
);
CREATE INDEX runs_by_tenant ON runs (tenant_id, created_at DESC); -- ties: rowid, insertion order
CREATE INDEX runs_by_route ON runs (tenant_id, route, created_at DESC);

CREATE TABLE run_events (
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq       BIGINT NOT NULL,
    tenant_id TEXT NOT NULL,
    at        BIGINT NOT NULL,
    type      TEXT NOT NULL,
    payload   BYTEA NOT NULL, -- the exact bytes hashed
    prev_hash BYTEA NOT NULL,
    hash      BYTEA NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE feedback (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rating     BIGINT NOT NULL CHECK (rating IN (-1, 1)),
    correction TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX feedback_by_run ON feedback (tenant_id, run_id);

CREATE TABLE agents (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    first_seen BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL,
    run_count  BIGINT NOT NULL,
    trust      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
