-- The learning loop: patterns discovered from runs, the artifacts learned
-- from them, the evidence about each artifact, and the reports of the
-- learning passes. Every table is tenant-scoped.

CREATE TABLE patterns (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key         TEXT NOT NULL,            -- the shape fingerprint (hex SHA-256)
    state       TEXT NOT NULL,
    optimizable DOUBLE PRECISION NOT NULL,
    data        TEXT NOT NULL,            -- JSON: the rest of the pattern (scores, averages, fingerprints)
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (tenant_id, key)
);
CREATE INDEX patterns_by_tenant ON patterns (tenant_id, optimizable DESC);

CREATE TABLE artifacts (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    pattern_id     TEXT NOT NULL REFERENCES patterns(id) ON DELETE CASCADE,
    state          TEXT NOT NULL,
    state_reason   TEXT NOT NULL,
    type           TEXT NOT NULL,
    representation TEXT NOT NULL,         -- JSON: the declarative artifact svc interprets
    provenance     TEXT NOT NULL,         -- JSON: source and holdout run ids
    side_effects   BIGINT NOT NULL,
    replay_pass    BIGINT NOT NULL DEFAULT 0,
    replay_fail    BIGINT NOT NULL DEFAULT 0,
    shadow_pass    BIGINT NOT NULL DEFAULT 0,
    shadow_fail    BIGINT NOT NULL DEFAULT 0,
    live_pass      BIGINT NOT NULL DEFAULT 0,
    live_fail      BIGINT NOT NULL DEFAULT 0,
    abstentions    BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    promoted_at    BIGINT
);
CREATE INDEX artifacts_by_tenant ON artifacts (tenant_id, created_at DESC);
CREATE INDEX artifacts_by_pattern ON artifacts (tenant_id, pattern_id);
CREATE INDEX artifacts_serving ON artifacts (state) WHERE state IN ('shadow', 'promoted');

CREATE TABLE artifact_evaluations (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL REFERENCES artifacts(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,            -- replay, shadow, live
    run_id      TEXT NOT NULL,            -- not a foreign key: retention may sweep the run
    outcome     TEXT NOT NULL,            -- pass, fail, abstain
    expected    TEXT NOT NULL,
    got         TEXT NOT NULL,
    reason      TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX evaluations_by_artifact ON artifact_evaluations (tenant_id, artifact_id, created_at DESC);

CREATE TABLE learning_reports (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, -- insertion order, as SQLite's rowid
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    report     TEXT NOT NULL,             -- JSON
    created_at BIGINT NOT NULL
);
CREATE INDEX learning_reports_by_tenant ON learning_reports (tenant_id, created_at DESC);
