-- Spend: counters of what calls cost, the budgets that limit them and the
-- soft budgets' alerts.
--
-- A counter is one scope's value (scope_key: an app's name, a key's id,
-- '' for the tenant) over one window (period hour, day or month, starting
-- at start_ms in the tenant's time zone), added to in the transaction that
-- stores the runs it counts. Each replica (process) adds to rows of its
-- own, so that it can leave out of its reads what it counts in memory, and
-- replicas never write the same row.
CREATE TABLE spend_counters (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    scope     TEXT NOT NULL,
    scope_key TEXT NOT NULL,
    period    TEXT NOT NULL,
    start_ms  BIGINT NOT NULL,
    replica   TEXT NOT NULL,
    usd       DOUBLE PRECISION NOT NULL,
    tokens    BIGINT NOT NULL,
    requests  BIGINT NOT NULL,
    hits      BIGINT NOT NULL, -- answers from the exact cache or an artifact, at no cost
    -- One window of a scope is a range of the key, its values together:
    -- a list reads the range, a sum finds each counter by the key, and the
    -- current windows' rows, which runs move, lie at the end of each.
    PRIMARY KEY (tenant_id, scope, period, start_ms, scope_key, replica)
);

-- A tenant's budgets, in the order they were set (position).
CREATE TABLE budgets (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    position   BIGINT NOT NULL,
    budget     TEXT NOT NULL, -- JSON spend.Budget
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A soft budget's thresholds reached, one row per window and percent: the
-- replica that inserts it sends the alert, once.
CREATE TABLE budget_alerts (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    budget_id TEXT NOT NULL,
    start_ms  BIGINT NOT NULL,
    percent   BIGINT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, budget_id, start_ms, percent)
);
