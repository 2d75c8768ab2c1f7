-- Who asked for each approval (the actor: an API key, a signed-in user),
-- so that the approvals one caller has pending can be counted and capped
-- (the tenant's approval_pending_limit).
ALTER TABLE approvals ADD COLUMN requester TEXT NOT NULL DEFAULT '';
UPDATE approvals SET requester = COALESCE(requested_by::jsonb ->> 'actor', '');
CREATE INDEX approvals_pending_by_requester ON approvals (tenant_id, requester) WHERE status = 'pending';
