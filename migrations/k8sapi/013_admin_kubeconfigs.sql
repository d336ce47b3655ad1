-- The operator's admin kubeconfigs. Each is a short-lived system:masters
-- certificate (12 h unless the request asks for 5 min to 7 days), issued
-- in a founding's answer and by POST /clusters/{id}/kubeconfig, and never
-- stored: what is kept is one row per issue, who asked, when, the
-- certificate's serial and expiry and the request's id, shown to the
-- cluster's org (GET /clusters/{id}/kubeconfigs). An issue that cannot be
-- recorded is not answered.
--
-- issued_by is the operator as k8sapi knows it (auth.Principal.Who): the org
-- and the fingerprint of its token, the first 12 hex digits of the token's
-- SHA-256 ("org:7:token:5e884898da28"); the certificate's common name says
-- the same, so the API server's audit log names it too.
CREATE TABLE IF NOT EXISTS admin_kubeconfigs (
    id              bigserial   PRIMARY KEY,
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    serial          text        NOT NULL CHECK (serial ~ '^[0-9a-f]{1,64}$'),
    issued_at       timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL CHECK (expires_at > issued_at),
    issued_by       text        NOT NULL CHECK (octet_length(issued_by) BETWEEN 1 AND 200),
    request_id      text        NOT NULL CHECK (octet_length(request_id) <= 200),
    CONSTRAINT admin_kubeconfigs_serial UNIQUE (kube_cluster_id, serial)
);
CREATE INDEX IF NOT EXISTS admin_kubeconfigs_newest ON admin_kubeconfigs (kube_cluster_id, issued_at DESC, id DESC);

-- CreateClusterFunction issues them (founding's answer, a replay, and
-- POST /clusters/{id}/kubeconfig), so it alone records them; it never reads
-- the record back. ClustersFunction lists them.
GRANT USAGE ON SEQUENCE admin_kubeconfigs_id_seq TO k8sapi_create_cluster;
GRANT INSERT (kube_cluster_id, serial, issued_at, expires_at, issued_by, request_id)
    ON admin_kubeconfigs TO k8sapi_create_cluster;
GRANT SELECT ON admin_kubeconfigs TO k8sapi_clusters;
