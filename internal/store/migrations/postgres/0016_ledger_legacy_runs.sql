-- On SQLite this lists the runs stored before the ledger existed, for
-- their legacy entries. No PostgreSQL database predates the ledger: svc
-- came to PostgreSQL after it, so there is nothing to list.
SELECT 1;
