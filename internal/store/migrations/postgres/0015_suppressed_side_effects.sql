-- A side effect a replay or shadow evaluation would have caused again is
-- recorded, suppressed, on the run it evaluated, naming the evaluation;
-- a replay that replaces an evaluation replaces its records too.
ALTER TABLE side_effects ADD COLUMN evaluation_id TEXT NOT NULL DEFAULT '';
CREATE INDEX side_effects_by_evaluation ON side_effects (tenant_id, evaluation_id) WHERE evaluation_id != '';
