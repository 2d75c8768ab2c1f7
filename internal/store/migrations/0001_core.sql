-- Tenants, API keys, per-tenant settings and the audit trail.
-- Times are Unix milliseconds (UTC).

CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    mode       TEXT NOT NULL CHECK (mode IN ('observe', 'optimize')),
    app_id     TEXT NOT NULL DEFAULT '',
    admin      INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    token_hash BLOB NOT NULL UNIQUE, -- sha256 of the token; the token itself is never stored
    prefix     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at);

CREATE TABLE settings (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL, -- JSON
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, key)
) WITHOUT ROWID;

CREATE TABLE audit_events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    id        TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    at        INTEGER NOT NULL,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL,
    decision  TEXT NOT NULL,
    target    TEXT NOT NULL DEFAULT '',
    details   TEXT NOT NULL DEFAULT '{}' -- JSON object
);
CREATE INDEX audit_events_by_tenant ON audit_events (tenant_id, seq);
CREATE INDEX audit_events_by_decision ON audit_events (tenant_id, decision, seq);
