-- Workflows (declarative definitions instantiated from templates, such as
-- the support-triage demo) and whether a tenant dismissed its onboarding.
-- 0006 is the accounts capability's.

CREATE TABLE workflows (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    template    TEXT NOT NULL DEFAULT '', -- the template it came from, '' when none
    description TEXT NOT NULL DEFAULT '',
    definition  TEXT NOT NULL,            -- JSON object
    created_at  BIGINT NOT NULL,
    UNIQUE (tenant_id, name)              -- seeding is idempotent by name
);

CREATE TABLE onboarding (
    tenant_id    TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    dismissed_at BIGINT NOT NULL
);
