-- Operators' admin certificates name the group the cluster's RBAC binds to
-- cluster-admin (k8sapi:cluster-admins, issue 43 item 7). A cluster founded
-- before that binding was part of its addons has no such binding, and
-- nothing k8sapi holds may add it after the initial node's window: its
-- operators keep system:masters, the one group its API server grants
-- everything, until the cluster is founded anew (docs/KEYS-AND-TRUST.md, "Admin kubeconfigs").
-- The column's first default marks every row that exists now; the second
-- is what every cluster founded from now on gets.
ALTER TABLE kube_clusters ADD COLUMN IF NOT EXISTS admin_group text NOT NULL DEFAULT 'system:masters'
    CHECK (admin_group IN ('system:masters', 'k8sapi:cluster-admins'));
ALTER TABLE kube_clusters ALTER COLUMN admin_group SET DEFAULT 'k8sapi:cluster-admins';
