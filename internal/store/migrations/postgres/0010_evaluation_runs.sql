-- A replay or live verdict on a run replaces the earlier one of the same
-- artifact: found by run.
CREATE INDEX evaluations_by_run ON artifact_evaluations (tenant_id, artifact_id, run_id, kind);
