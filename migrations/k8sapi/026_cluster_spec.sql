-- The cluster file an operator last applied (issue 41: `k8sapi apply -f`),
-- kept by the server so that a plan is computed the same way from any
-- machine, and shown beside the cluster's status in GET /clusters/{id}.
-- NULL for a cluster founded without one (k8sapi create cluster, curl).
ALTER TABLE kube_clusters ADD COLUMN IF NOT EXISTS spec jsonb;

-- A file's name is the operator's name of the cluster: unique among the
-- org's clusters that are not deleted, so `k8sapi get cluster NAME` and
-- a second apply of the same file find one cluster.
CREATE UNIQUE INDEX IF NOT EXISTS kube_clusters_spec_name ON kube_clusters (org_id, (spec->>'name'))
    WHERE spec IS NOT NULL AND status <> 'deleted';

-- ClustersFunction keeps the file (PUT /clusters/{id}/spec) and sets the
-- snapshot schedule it names.
GRANT UPDATE (spec, etcd_snapshot_interval_seconds) ON kube_clusters TO k8sapi_clusters;
