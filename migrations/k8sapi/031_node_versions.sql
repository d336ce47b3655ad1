-- Every node records the Kubernetes version its bundle is rendered for
-- (issue 38, item 1): during a rolling upgrade a cluster's nodes run two
-- versions, and each node's bundle, artifacts and images are its own
-- version's. A node made without one (a founding's, a pool's) takes its
-- cluster's when its row is inserted; a node an upgrade makes names the
-- target. The rows of an older schema take their cluster's.
ALTER TABLE kube_nodes ADD COLUMN IF NOT EXISTS kubernetes_version text NOT NULL DEFAULT '';

UPDATE kube_nodes n SET kubernetes_version = c.kubernetes_version
    FROM kube_clusters c WHERE c.id = n.kube_cluster_id AND n.kubernetes_version = '';

-- The cluster's version for a row inserted without one: the inserts of a
-- founding and a pool name no version, so the version still serving during
-- a deployment (docs/RUNBOOK.md, "Safe deployments") writes correct rows.
CREATE OR REPLACE FUNCTION kube_nodes_version_of_cluster() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kubernetes_version = '' THEN
        SELECT kubernetes_version INTO NEW.kubernetes_version FROM kube_clusters WHERE id = NEW.kube_cluster_id;
    END IF;
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS kube_nodes_version_of_cluster ON kube_nodes;
CREATE TRIGGER kube_nodes_version_of_cluster BEFORE INSERT ON kube_nodes
    FOR EACH ROW EXECUTE FUNCTION kube_nodes_version_of_cluster();

-- A replacement an upgrade begins names its new node's version.
GRANT INSERT (kubernetes_version) ON kube_nodes TO k8sapi_clusters, k8sapi_reconciler;

-- A rolling upgrade of a cluster (issue 38, item 2): a durable operation
-- like a replacement (migration 018). Its intent is committed before any
-- remote call (with its operation, kind 'upgrade', target the cluster,
-- in operations: migration 025); the reconciler drives it under that
-- operation's lease, one
-- step at a time: the pre-upgrade snapshot, each control-plane node by a
-- replacement whose new node is at the pass's version, then each pool's
-- workers by surge. A target two or more minors ahead is a chain of
-- passes (pass_version is the one under way).
CREATE TABLE IF NOT EXISTS cluster_upgrades (
    id                    bigserial   PRIMARY KEY,
    kube_cluster_id       bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    from_version          text        NOT NULL,
    to_version            text        NOT NULL,
    pass_version          text        NOT NULL,
    surge                 integer     NOT NULL CHECK (surge BETWEEN 1 AND 10),
    drain_timeout_seconds integer     NOT NULL CHECK (drain_timeout_seconds BETWEEN 30 AND 3600),
    -- The operator overrode the deprecated-API gate (recorded: the audit
    -- event names it too).
    deprecated_apis_overridden boolean NOT NULL DEFAULT false,
    requested_by          text        NOT NULL,
    -- upgrading: the reconciler drives it; paused: a gate failed
    -- (state_reason, paused_node say which and where), the operator
    -- resumes or aborts; aborting: driven back to from_version; done;
    -- aborted.
    state                 text        NOT NULL DEFAULT 'upgrading'
        CHECK (state IN ('upgrading', 'paused', 'aborting', 'done', 'aborted')),
    state_reason          text        NOT NULL DEFAULT '' CHECK (octet_length(state_reason) <= 2048),
    paused_node           text        NOT NULL DEFAULT '',
    -- The pre-upgrade snapshot, once recorded; the replacement under way.
    snapshot_id           bigint      REFERENCES etcd_snapshots (id) ON DELETE SET NULL,
    replacement_id        bigint      REFERENCES node_replacements (id) ON DELETE SET NULL,
    -- The pool being moved by surge: its count before the surge and how
    -- many new workers the surge adds (recorded before the pool is
    -- scaled up, so a cut-off never surges twice).
    surge_pool_id         bigint      REFERENCES node_pools (id) ON DELETE SET NULL,
    surge_base            integer     NOT NULL DEFAULT 0,
    surge_count           integer     NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
-- One upgrade at a time per cluster.
CREATE UNIQUE INDEX IF NOT EXISTS cluster_upgrades_one_live ON cluster_upgrades (kube_cluster_id)
    WHERE state IN ('upgrading', 'paused', 'aborting');

-- What a node reports of its API server's deprecated-API requests
-- (apiserver_requested_deprecated_apis, read on the node by its own
-- identity): the APIs requested in the last day with the release that
-- removes each, and when the node reported them.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS deprecated_apis jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN IF NOT EXISTS deprecated_apis_reported_at timestamptz;

-- ClustersFunction records an upgrade, pauses, resumes and aborts it; the
-- reconciler drives it (and moves the cluster's version and artifact
-- record once every API server is at the pass's version).
GRANT USAGE ON SEQUENCE cluster_upgrades_id_seq TO k8sapi_clusters;
GRANT SELECT ON cluster_upgrades TO k8sapi_clusters, k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, from_version, to_version, pass_version, surge, drain_timeout_seconds,
    deprecated_apis_overridden, requested_by) ON cluster_upgrades TO k8sapi_clusters;
GRANT UPDATE (state, state_reason, paused_node, replacement_id, updated_at) ON cluster_upgrades TO k8sapi_clusters, k8sapi_reconciler;
GRANT UPDATE (pass_version, snapshot_id, surge_pool_id, surge_base, surge_count) ON cluster_upgrades TO k8sapi_reconciler;
GRANT UPDATE (kubernetes_version, artifacts) ON kube_clusters TO k8sapi_reconciler;
GRANT UPDATE (deprecated_apis, deprecated_apis_reported_at) ON kube_nodes TO k8sapi_get_bundle;
-- The reconciler begins the replacements of an upgrade (ClustersFunction
-- begins an operator's): the same rows.
GRANT USAGE ON SEQUENCE node_replacements_id_seq TO k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, old_node_id, old_vm_id, old_node_name) ON node_replacements TO k8sapi_reconciler;
GRANT UPDATE (new_node_id, new_node_name) ON node_replacements TO k8sapi_reconciler;
GRANT INSERT (replacement_id) ON kube_nodes TO k8sapi_reconciler;
GRANT UPDATE (last_ordinal) ON kube_clusters TO k8sapi_reconciler;
