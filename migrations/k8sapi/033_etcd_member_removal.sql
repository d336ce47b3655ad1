-- Shrinking the control plane (issue 39, item 1; docs/SCALE-CONTROL-PLANE.md):
-- a scaling marks the member that leaves retiring; a member that stays
-- (the lowest-ordinal ready one) removes it from etcd and reports the
-- removal (POST /bootstrap/control-plane/{vm_id}/etcd-membership), and only
-- then does the reconciler delete its VM and its row. etcd_removed_at is
-- when that report was recorded, etcd_removed_by the VM that made it (never
-- the leaving node's own: a dead node cannot, a live one is not trusted to).
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS etcd_removed_at timestamptz,
    ADD COLUMN IF NOT EXISTS etcd_removed_by bigint;

-- GetBundleFunction records the report; the reconciler reads it (its
-- SELECT on kube_nodes, migration 011) and removes the row.
GRANT UPDATE (etcd_removed_at, etcd_removed_by) ON kube_nodes TO k8sapi_get_bundle;

-- A scaling records in its spec when it last began a membership change
-- (changed_at: a new member intended, a leaving one marked), which its
-- deadlines count from; a release moves updated_at at every wait.
GRANT UPDATE (spec) ON operations TO k8sapi_reconciler;
