-- A run's events are written with their run, in the transaction that
-- stores it, or appended to a stored run found under its row lock: the
-- foreign key's check of each event's insert, a locking read of its run,
-- never refused one. The key goes, whatever its name; a trigger keeps its
-- cascade (a deleted run takes its events with it). Replicas of an earlier
-- version beside this one write events as before.

DO $$
DECLARE
    key text;
BEGIN
    FOR key IN SELECT conname FROM pg_constraint
        WHERE conrelid = 'run_events'::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE run_events DROP CONSTRAINT %I', key);
    END LOOP;
END $$;

CREATE FUNCTION svc_delete_run_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM run_events WHERE run_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_delete_events AFTER DELETE ON runs
FOR EACH ROW EXECUTE FUNCTION svc_delete_run_events();
