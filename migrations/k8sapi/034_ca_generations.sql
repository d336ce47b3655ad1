-- CA rotation (issue 40; docs/CA-ROTATION.md). Each root of trust of a
-- cluster (its cluster, etcd and front-proxy CAs and its service-account
-- signer) may hold several generations: next (trusted, signs nothing yet),
-- current (trusted, signs), previous (trusted, signs nothing any more),
-- retired (trusted by nothing, its sealed key overwritten). Each is its
-- own row, its key sealed under the cluster's data key with additional
-- data that names the generation (keyring.genPurpose), so an old key never
-- opens as the new one.
--
-- No backfill: a root with no row here is generation 1, current, read from
-- its kube_clusters columns (ca_cert, ca_key_sealed, ...), as every
-- version reads it. The version still serving during a deployment founds
-- clusters into those columns only; a backfill would miss them, and a
-- copy of every sealed key would be one more place to crypto-shred. A
-- rotation adopts generation 1 into a row (the same cert and sealed bytes,
-- whose additional data already names generation 1) when it makes
-- generation 2; from then on the rows are the root's truth, and the
-- distrust of generation 1 overwrites the column's sealed key too.
CREATE TABLE IF NOT EXISTS ca_generations (
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    root            text        NOT NULL CHECK (root IN ('ca', 'etcd-ca', 'front-proxy-ca', 'service-account')),
    generation      integer     NOT NULL CHECK (generation >= 1),
    state           text        NOT NULL CHECK (state IN ('next', 'current', 'previous', 'retired')),
    -- the CA's certificate (PEM); the signer's public key for service-account
    cert            text        NOT NULL,
    key_sealed      bytea       NOT NULL,
    not_after       timestamptz,
    -- the rotation that made (or adopted) it
    operation_id    bigint      REFERENCES operations (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kube_cluster_id, root, generation),
    CONSTRAINT ca_generations_retired_shredded CHECK (state <> 'retired' OR octet_length(key_sealed) = 0)
);
-- One signer and at most one generation on its way per root.
CREATE UNIQUE INDEX IF NOT EXISTS ca_generations_one_current ON ca_generations (kube_cluster_id, root) WHERE state = 'current';
CREATE UNIQUE INDEX IF NOT EXISTS ca_generations_one_next ON ca_generations (kube_cluster_id, root) WHERE state = 'next';

-- A rotation is an operation (kind ca-rotation, target the cluster); its
-- phase and the roots it rotates are here. distrust_wait_seconds is the
-- longest lifetime of anything the old roots signed that may still be in
-- use once signing begins (the admin kubeconfigs' largest ttl, a
-- service-account token's longest expiry), fixed when the rotation began.
CREATE TABLE IF NOT EXISTS ca_rotations (
    operation_id          bigint      PRIMARY KEY REFERENCES operations (id) ON DELETE CASCADE,
    kube_cluster_id       bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    roots                 text[]      NOT NULL CHECK (cardinality(roots) BETWEEN 1 AND 4
        AND roots <@ ARRAY['ca', 'etcd-ca', 'front-proxy-ca', 'service-account']),
    -- trusting, signing, distrusting, done; or, asked to abort before the
    -- distrust, untrusting (the next generations leave the bundles) and aborted
    phase                 text        NOT NULL CHECK (phase IN ('trusting', 'signing', 'distrusting', 'done', 'untrusting', 'aborted')),
    phase_began_at        timestamptz NOT NULL DEFAULT now(),
    signing_began_at      timestamptz,
    distrust_wait_seconds integer     NOT NULL CHECK (distrust_wait_seconds >= 0),
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ca_rotations_of_cluster ON ca_rotations (kube_cluster_id, operation_id);

-- Per node, the rotation and phase it last applied: recorded by its
-- renewal call under that phase (a control-plane node's or a worker's).
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS ca_rotation_id      bigint REFERENCES operations (id),
    ADD COLUMN IF NOT EXISTS ca_phase_applied    text,
    ADD COLUMN IF NOT EXISTS ca_phase_applied_at timestamptz;

-- Every function that loads a cluster reads its generations and its
-- rotation. ClustersFunction begins and aborts a rotation (no key opened);
-- ReconcilerFunction drives it (makes, adopts, retires generations);
-- GetBundleFunction records a node's applied phase; the deletions of
-- CreateClusterFunction, ClustersFunction and ReconcilerFunction overwrite
-- every sealed key, the generations' too.
GRANT SELECT ON ca_generations, ca_rotations TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_get_bundle, k8sapi_reconciler;
GRANT UPDATE (key_sealed, updated_at) ON ca_generations TO k8sapi_create_cluster, k8sapi_clusters;
GRANT INSERT ON ca_generations TO k8sapi_reconciler;
GRANT UPDATE (state, key_sealed, updated_at) ON ca_generations TO k8sapi_reconciler;
GRANT INSERT ON ca_rotations TO k8sapi_clusters;
GRANT UPDATE (phase, phase_began_at) ON ca_rotations TO k8sapi_clusters;
GRANT UPDATE (phase, phase_began_at, signing_began_at) ON ca_rotations TO k8sapi_reconciler;
GRANT UPDATE (ca_rotation_id, ca_phase_applied, ca_phase_applied_at) ON kube_nodes TO k8sapi_get_bundle;
GRANT UPDATE (ca_key_sealed, etcd_ca_key_sealed, front_proxy_ca_key_sealed, service_account_key_sealed) ON kube_clusters TO k8sapi_reconciler;
