-- Deleting an organization deletes every record of it, its share of the
-- ledger too. The ledger stays append-only for every tenant that exists:
-- its entries and checkpoints may be deleted only once their tenant's row
-- is gone, and no checkpoint is added for a tenant that no longer exists
-- (one signed while its organization was being deleted).
DROP TRIGGER ledger_entries_no_delete;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
WHEN EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id)
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
DROP TRIGGER ledger_checkpoints_no_delete;
CREATE TRIGGER ledger_checkpoints_no_delete BEFORE DELETE ON ledger_checkpoints
WHEN EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id)
BEGIN SELECT RAISE(ABORT, 'ledger checkpoints are append-only'); END;
CREATE TRIGGER ledger_checkpoints_live_tenant BEFORE INSERT ON ledger_checkpoints
WHEN NOT EXISTS (SELECT 1 FROM tenants WHERE id = NEW.tenant_id)
BEGIN SELECT RAISE(ABORT, 'no checkpoint for a deleted tenant'); END;
