-- k8sapi's own tables. Private keys never appear here in plaintext: every
-- *_sealed column holds nonce||AES-256-GCM ciphertext under the cluster's data
-- key, and wrapped_data_key holds that data key wrapped by KMS.
CREATE TABLE kube_clusters (
    id                         bigserial PRIMARY KEY,
    org_id                     bigint      NOT NULL,
    project_id                 bigint      NOT NULL DEFAULT 1,
    name                       text        NOT NULL,
    control_plane_dns_name     text        NOT NULL,
    status                     text        NOT NULL DEFAULT 'founding'
        CHECK (status IN ('founding', 'active', 'failed', 'deleting', 'deleted')),
    key_algorithm              text        NOT NULL CHECK (key_algorithm IN ('ecdsa-p256', 'rsa-2048')),
    kubernetes_version         text        NOT NULL,
    cluster_domain             text        NOT NULL,
    service_cidr               text        NOT NULL,
    pod_cidr                   text        NOT NULL,
    control_plane_count        integer     NOT NULL CHECK (control_plane_count BETWEEN 1 AND 3),
    security_group_ids         bigint[]    NOT NULL DEFAULT '{}',
    -- the group founding created (deleted with the cluster); NULL when the
    -- operator supplied their own groups, which are never deleted.
    created_security_group_id  bigint,
    kms_key_id                 text        NOT NULL,
    wrapped_data_key           bytea       NOT NULL,
    ca_cert                    text        NOT NULL,
    ca_key_sealed              bytea       NOT NULL,
    etcd_ca_cert               text        NOT NULL,
    etcd_ca_key_sealed         bytea       NOT NULL,
    front_proxy_ca_cert        text        NOT NULL,
    front_proxy_ca_key_sealed  bytea       NOT NULL,
    service_account_pub        text        NOT NULL,
    service_account_key_sealed bytea       NOT NULL,
    dns_configured             boolean     NOT NULL DEFAULT false,
    dns_error                  text        NOT NULL DEFAULT '',
    idempotency_key            text,
    request_fingerprint        text,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT kube_clusters_org_idempotency UNIQUE (org_id, idempotency_key)
);
CREATE INDEX kube_clusters_org ON kube_clusters (org_id, id);

-- One row per control-plane VM for each facet it runs (stacked etcd member,
-- API server). Both carry the node's serving identity for that facet.
CREATE TABLE etcd_nodes (
    id              bigserial PRIMARY KEY,
    kube_cluster_id bigint  NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    vm_id           bigint  NOT NULL,
    ordinal         integer NOT NULL,
    node_name       text    NOT NULL,
    cert            text    NOT NULL,
    key_sealed      bytea   NOT NULL,
    CONSTRAINT etcd_nodes_vm UNIQUE (vm_id),
    CONSTRAINT etcd_nodes_ordinal UNIQUE (kube_cluster_id, ordinal)
);

CREATE TABLE apiserver_nodes (
    id              bigserial PRIMARY KEY,
    kube_cluster_id bigint  NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    vm_id           bigint  NOT NULL,
    ordinal         integer NOT NULL,
    node_name       text    NOT NULL,
    cert            text    NOT NULL,
    key_sealed      bytea   NOT NULL,
    CONSTRAINT apiserver_nodes_vm UNIQUE (vm_id),
    CONSTRAINT apiserver_nodes_ordinal UNIQUE (kube_cluster_id, ordinal)
);
