-- The negative cache tier, and what each run saved.

CREATE TABLE negative_cache (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

-- saved_usd and saved_ms: what serving from a cache or an artifact saved
-- against the live call it avoided; ghost_saved_usd: what an observe-mode
-- run would have saved.
ALTER TABLE runs ADD COLUMN saved_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN saved_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN ghost_saved_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
