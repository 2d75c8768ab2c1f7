-- A run's events are written with their run, in the transaction that
-- stores it, or appended to a stored run found under the writer's lock:
-- the foreign key's check of each event's insert, a lookup of its run,
-- never refused one and cost a sixth of storing a run. The key goes; a
-- trigger keeps its cascade (a deleted run takes its events with it).
-- SQLite drops a foreign key only with its table: the events are copied,
-- once, at the upgrade (it takes their size again on disk while it runs).

CREATE TABLE run_events_unchecked (
    run_id    TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    tenant_id TEXT NOT NULL,
    at        INTEGER NOT NULL,
    type      TEXT NOT NULL,
    payload   BLOB NOT NULL, -- the exact bytes hashed
    prev_hash BLOB NOT NULL,
    hash      BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO run_events_unchecked SELECT run_id, seq, tenant_id, at, type, payload, prev_hash, hash FROM run_events;
DROP TABLE run_events;
ALTER TABLE run_events_unchecked RENAME TO run_events;

CREATE TRIGGER runs_delete_events AFTER DELETE ON runs
BEGIN
    DELETE FROM run_events WHERE run_id = old.id;
END;
