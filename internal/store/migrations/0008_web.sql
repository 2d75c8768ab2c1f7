-- The semantic web: compiled snapshots of pages per tenant, and each fetch
-- served (compiled or from the cache) with the prompt tokens it saved.

CREATE TABLE web_snapshots (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    source      TEXT NOT NULL CHECK (source IN ('builtin', 'external')),
    html_bytes  INTEGER NOT NULL,
    som_bytes   INTEGER NOT NULL,
    drift_score REAL,             -- against the previous snapshot of the URL; NULL for the first
    som         TEXT NOT NULL,    -- the snapshot, JSON
    created_at  INTEGER NOT NULL
);
CREATE INDEX web_snapshots_by_url ON web_snapshots (tenant_id, url, created_at);
CREATE INDEX web_snapshots_by_tenant ON web_snapshots (tenant_id, created_at);

CREATE TABLE web_fetches (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    snapshot_id  TEXT NOT NULL,
    cached       INTEGER NOT NULL CHECK (cached IN (0, 1)),
    tokens_saved INTEGER NOT NULL,
    at           INTEGER NOT NULL
);
CREATE INDEX web_fetches_by_tenant ON web_fetches (tenant_id, at);
