-- The snapshot schedule reads only what is due (issue 42): each cluster
-- carries when its next scheduled snapshot is due, so the reconciler's
-- every-minute run walks an index of the due clusters instead of probing
-- every active cluster's newest snapshot.
--
-- next_snapshot_at is the newest snapshot's requested_at plus the
-- cluster's interval (etcdsnapshot.Due), moved by RecordEtcdSnapshots in
-- the statement that asks for a snapshot; '-infinity' (never asked for) is
-- due at once. The schedule still judges due from the snapshots themselves
-- among the clusters this index hands it: the column only narrows the walk.
-- Whatever changes a cluster's interval must move it too.
ALTER TABLE kube_clusters ADD COLUMN IF NOT EXISTS next_snapshot_at timestamptz NOT NULL DEFAULT '-infinity';

UPDATE kube_clusters k SET next_snapshot_at = s.newest + k.etcd_snapshot_interval_seconds * interval '1 second'
FROM (SELECT kube_cluster_id, max(requested_at) AS newest FROM etcd_snapshots GROUP BY kube_cluster_id) s
WHERE s.kube_cluster_id = k.id;

CREATE INDEX IF NOT EXISTS kube_clusters_snapshot_due ON kube_clusters (next_snapshot_at) INCLUDE (id)
    WHERE status = 'active' AND etcd_snapshot_interval_seconds > 0;
-- 024's walk of every scheduled cluster is replaced by the one above.
DROP INDEX IF EXISTS kube_clusters_snapshot_schedule;

-- FailOverdueEtcdSnapshots reads only the pending snapshots asked for
-- before its cutoff, not every one in flight. On an expression (UTC wall
-- time, immutable) so ANALYZE keeps statistics of the pending snapshots'
-- times: on the plain column the planner judged the cutoff by every
-- snapshot's time, thought most pending ones overdue and read them all.
CREATE INDEX IF NOT EXISTS etcd_snapshots_pending_since ON etcd_snapshots ((requested_at AT TIME ZONE 'UTC'))
    WHERE state = 'pending';

-- Who asks for a snapshot moves the schedule (and locks the row to: FOR
-- NO KEY UPDATE needs an UPDATE grant).
GRANT UPDATE (next_snapshot_at) ON kube_clusters TO k8sapi_clusters, k8sapi_reconciler;
