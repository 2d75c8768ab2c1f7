-- The W3C trace id of the call a run records, when it had one (see
-- docs/tracing.md); empty for the runs recorded before.
ALTER TABLE runs ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
