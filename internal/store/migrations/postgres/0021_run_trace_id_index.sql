-- Runs found by their trace id (GET /api/v1/runs?traceId=): only the runs
-- that have one are indexed.
CREATE INDEX runs_by_trace_id ON runs (tenant_id, trace_id) WHERE trace_id <> '';
