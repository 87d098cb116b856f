-- Work by tenant (issue 28): which account (src/tenants/tenant-id.ts) each event came through and each
-- send used, and which tenants an operator may see and decide.
-- The event's tenant, as the workflow's own (encrypted, verified) input names it: the decision check
-- (activities/decisions.ts) and the codec server read it by workflow id, never from the client.
ALTER TABLE events ADD COLUMN tenant text;
CREATE INDEX events_workflow ON events (workflow_id);
-- The tenant whose credential a send uses (the step's destination.tenant): the worker's metrics label.
ALTER TABLE effects ADD COLUMN tenant text;
-- NULL: every tenant (as before). A list: only work whose event came through one of these tenants.
ALTER TABLE operators ADD COLUMN tenants text[] CHECK (tenants IS NULL OR cardinality(tenants) > 0);
