-- The audit trail of a cluster: one row per state-changing request an
-- operator of the cluster's org made on it (found, delete, re-open a
-- node's bootstrap, issue an admin kubeconfig), whatever its outcome:
-- who (auth.Principal.Who: the org and its token's fingerprint), what
-- (the action and the resource path), how it ended (succeeded, refused:
-- 4xx, failed: 5xx, with the status) and the request's id, which the
-- function's log and the API's access log carry too. Listed newest first
-- by GET /clusters/{id}/events.
--
-- Every such request, a refused one whose cluster is not the caller's
-- included, is also one "audit" line in its function's log group, which
-- outlives the stack (internal/audit); this table is the per-cluster view.
CREATE TABLE IF NOT EXISTS audit_events (
    id              bigserial   PRIMARY KEY,
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    at              timestamptz NOT NULL,
    principal       text        NOT NULL CHECK (octet_length(principal) BETWEEN 1 AND 200),
    action          text        NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    resource        text        NOT NULL CHECK (octet_length(resource) BETWEEN 1 AND 300),
    outcome         text        NOT NULL CHECK (outcome IN ('succeeded', 'refused', 'failed')),
    status          smallint    NOT NULL CHECK (status BETWEEN 100 AND 599),
    request_id      text        NOT NULL CHECK (octet_length(request_id) <= 200)
);
CREATE INDEX IF NOT EXISTS audit_events_newest ON audit_events (kube_cluster_id, at DESC, id DESC);

-- The two functions that serve those requests append; neither updates or
-- deletes a row. ClustersFunction lists them.
GRANT USAGE ON SEQUENCE audit_events_id_seq TO k8sapi_create_cluster, k8sapi_clusters;
GRANT INSERT (kube_cluster_id, at, principal, action, resource, outcome, status, request_id)
    ON audit_events TO k8sapi_create_cluster, k8sapi_clusters;
GRANT SELECT ON audit_events TO k8sapi_clusters;
