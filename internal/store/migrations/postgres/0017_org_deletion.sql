-- Deleting an organization deletes every record of it, its share of the
-- ledger too. The ledger stays append-only for every tenant that exists:
-- its entries and checkpoints may be deleted only once their tenant's row
-- is gone, and no checkpoint is added for a tenant that no longer exists
-- (one signed while its organization was being deleted).
CREATE FUNCTION svc_append_only_while_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id) THEN
        RAISE EXCEPTION '% are append-only', TG_ARGV[0];
    END IF;
    RETURN OLD;
END $$;
DROP TRIGGER ledger_entries_no_delete ON ledger_entries;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
FOR EACH ROW EXECUTE FUNCTION svc_append_only_while_tenant('ledger entries');
DROP TRIGGER ledger_checkpoints_no_delete ON ledger_checkpoints;
CREATE TRIGGER ledger_checkpoints_no_delete BEFORE DELETE ON ledger_checkpoints
FOR EACH ROW EXECUTE FUNCTION svc_append_only_while_tenant('ledger checkpoints');
CREATE FUNCTION svc_checkpoint_live_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tenants WHERE id = NEW.tenant_id) THEN
        RAISE EXCEPTION 'no checkpoint for a deleted tenant';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER ledger_checkpoints_live_tenant BEFORE INSERT ON ledger_checkpoints
FOR EACH ROW EXECUTE FUNCTION svc_checkpoint_live_tenant();
