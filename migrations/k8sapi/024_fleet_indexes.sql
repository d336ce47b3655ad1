-- Indexes for a fleet (issue 42): what the reconciler's every-minute run
-- reads must grow with what is due, not with the clusters there are.
--
-- The snapshot schedule (store.DueSnapshotClusters) walks the clusters
-- whose schedule is on: this index holds exactly those, with their
-- interval, so the walk reads no kube_clusters heap row (each row is
-- kilobytes of certificates) and only a due cluster's row is fetched.
CREATE INDEX IF NOT EXISTS kube_clusters_snapshot_schedule ON kube_clusters (id)
    INCLUDE (etcd_snapshot_interval_seconds)
    WHERE status = 'active' AND etcd_snapshot_interval_seconds > 0;
