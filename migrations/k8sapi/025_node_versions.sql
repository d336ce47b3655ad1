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
