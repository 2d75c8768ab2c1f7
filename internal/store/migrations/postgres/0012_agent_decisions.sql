-- The decisions an agent's stored standing has moved by: a standing that
-- arrives after a later one (a run's batch after a traced tool call) is
-- not stored over it.
ALTER TABLE agents ADD COLUMN decisions BIGINT NOT NULL DEFAULT 0;
