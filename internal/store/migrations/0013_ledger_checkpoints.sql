-- The run ledger's keyed half: each run records the version of its chain
-- (1: the seed binds tenant and run id; 2: it also binds the run's digest,
-- every field the API shows). Runs stored before this migration are 1.

ALTER TABLE runs ADD COLUMN chain_version INTEGER NOT NULL DEFAULT 1;

-- The ledger: an append-only list of entries (leaves), each written in the
-- transaction of the change it records: a run stored with its events, an
-- event appended to a run's chain, a retention sweep (prune: the tenant's
-- runs created before run_at may be gone). seq orders every entry of every
-- tenant; entries are never updated or deleted.
CREATE TABLE ledger_entries (
    seq         INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    run_id      TEXT NOT NULL,    -- '' for a prune
    kind        TEXT NOT NULL,    -- run, event, prune
    event_count INTEGER NOT NULL, -- the run's chain length after the change
    head_hash   BLOB NOT NULL,    -- the run's chain head after the change
    digest      BLOB NOT NULL,    -- the run's digest (run entries)
    run_at      INTEGER NOT NULL, -- the run's created_at; a prune's cutoff
    created_at  INTEGER NOT NULL
);
CREATE INDEX ledger_entries_by_tenant ON ledger_entries (tenant_id, seq);

-- Signed checkpoints, per tenant: each commits to the tenant's entries
-- after its previous checkpoint (a Merkle root over their leaves) and to
-- that checkpoint (prev_hash), signed with the ledger key kept outside the
-- database.
CREATE TABLE ledger_checkpoints (
    tenant_id  TEXT NOT NULL,
    number     INTEGER NOT NULL, -- 1, 2, … within the tenant
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    entries    INTEGER NOT NULL,
    root       BLOB NOT NULL,
    prev_hash  BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    key_id     TEXT NOT NULL,
    signature  BLOB NOT NULL,
    PRIMARY KEY (tenant_id, number)
) WITHOUT ROWID;

-- Append-only, against mistakes: someone with write access to the file can
-- drop these, which is what the signed checkpoints are for.
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER ledger_checkpoints_no_update BEFORE UPDATE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT, 'ledger checkpoints are append-only'); END;
CREATE TRIGGER ledger_checkpoints_no_delete BEFORE DELETE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT, 'ledger checkpoints are append-only'); END;
