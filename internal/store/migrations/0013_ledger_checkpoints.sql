-- The run ledger's keyed half: each run records the version of its chain
-- (1: the seed binds tenant and run id; 2: it also binds the run's digest,
-- every field the API shows). Runs stored before this migration are 1.

ALTER TABLE runs ADD COLUMN chain_version INTEGER NOT NULL DEFAULT 1;
