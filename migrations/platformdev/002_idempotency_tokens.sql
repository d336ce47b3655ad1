-- DEV ONLY. The compute API honours idempotency tokens on creates: a repeat
-- of a token answers the VM the first create made (even one deleted since),
-- never a second VM. The simulator keeps them with the VMs, as the real
-- service keeps them in its own database.
ALTER TABLE vms ADD COLUMN idempotency_token text;
CREATE UNIQUE INDEX vms_org_idempotency_token ON vms (org_id, idempotency_token);
