-- Runs stored before the ledger existed get a ledger entry (kind legacy)
-- with their digest and head as they are now, so that the first checkpoint
-- signs them and every run is named by an entry from then on. This lists
-- them; recordLegacyRuns (store.go) writes their entries in this
-- migration's transaction, so it happens once, and never again for a run
-- someone adds later.
CREATE TEMP TABLE legacy_runs AS
    SELECT rowid AS rid FROM runs WHERE (tenant_id, id) NOT IN (SELECT tenant_id, run_id FROM ledger_entries);
