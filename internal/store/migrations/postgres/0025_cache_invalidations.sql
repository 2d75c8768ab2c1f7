-- How many times each tenant's in-memory cache tier (tier '' for every
-- tier) was invalidated: replicas that missed the notification of an
-- invalidation see the count move and drop the same entries.
CREATE TABLE cache_invalidations (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    tier      TEXT NOT NULL,
    epoch     BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, tier)
);
