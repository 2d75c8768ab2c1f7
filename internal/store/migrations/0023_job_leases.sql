-- Several replicas share one queue. A running job is leased: owner is the
-- process that claimed it, lease_until when the claim lapses unless that
-- process renews it; any replica queues again a running job whose lease
-- has lapsed (its process died). Jobs left running before this migration
-- have lease 0, lapsed.
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
-- once_key names work that is queued once per period whichever replica
-- queues it (a tenant's daily retention sweep): a second insert conflicts.
ALTER TABLE jobs ADD COLUMN once_key TEXT;
CREATE UNIQUE INDEX jobs_once ON jobs (tenant_id, once_key);
-- The checkpointer's look at what the checkpoints of every tenant cover.
CREATE INDEX ledger_checkpoints_by_last_seq ON ledger_checkpoints (last_seq);
