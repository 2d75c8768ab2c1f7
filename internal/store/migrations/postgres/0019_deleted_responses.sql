-- A response deleted through the Responses API: its run stays in the
-- ledger, append-only evidence of the call, and the Responses API reads
-- it no more. The row goes with its run (retention) or its tenant.
CREATE TABLE deleted_responses (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    deleted_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);
CREATE INDEX deleted_responses_by_run ON deleted_responses (run_id); -- for the cascade from runs
