-- DEV ONLY. Numbered after 002 (idempotency tokens, the founding operation).
-- A token the platform issues to a VM (IMDS access-token) names
-- that VM; an operator's token names none. The real token service must keep
-- the same contract (SECURITY.md, "What the token service must guarantee").
ALTER TABLE principal_tokens ADD COLUMN vm_id bigint;
