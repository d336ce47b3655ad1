-- A retry answers at once (issue 43, item 6). A founding checks its
-- subnet, image and instance type with the compute API, and makes its
-- keys, before it commits its cluster row: until then a second request
-- with the same Idempotency-Key found no row, made the same compute calls
-- and only then met the first one's row. A claim is committed first, so
-- the second request answers from the database (409, or 422 for another
-- body) without calling the compute API. The founding request deletes its
-- claim when it ends; one whose holder died runs out at claimed_until
-- (the request's lease) and is taken over by the next request.
CREATE TABLE IF NOT EXISTS founding_claims (
    org_id              bigint      NOT NULL,
    idempotency_key     text        NOT NULL CHECK (octet_length(idempotency_key) <= 255),
    request_fingerprint text        NOT NULL,
    claim_owner         text        NOT NULL,
    claimed_until       timestamptz NOT NULL,
    PRIMARY KEY (org_id, idempotency_key)
);

GRANT SELECT, DELETE ON founding_claims TO k8sapi_create_cluster;
GRANT INSERT (org_id, idempotency_key, request_fingerprint, claim_owner, claimed_until) ON founding_claims TO k8sapi_create_cluster;
GRANT UPDATE (request_fingerprint, claim_owner, claimed_until) ON founding_claims TO k8sapi_create_cluster;
