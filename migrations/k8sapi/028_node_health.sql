-- Node health and automatic remediation (issue 39, items 2 and 3).
--
-- Every ready node reports on a timer that it is alive and what it sees
-- (POST /bootstrap/{control-plane,worker}/{vm_id}/health, its own proofs):
-- health_reported_at is the last report, health_checks what it said (an
-- object of check name -> {"ok": bool, "message": text}), and
-- health_failing_since when its reports began to name a failing check (NULL
-- while every check passes). A node that stops reporting is judged from
-- health_reported_at by k8sapi (internal/nodehealth); nothing is written
-- for it. A node that never reported (still bootstrapping, or whose bundle
-- predates the reports) has all three NULL and is never remediated.
--
-- remediation_refused is the reason the last remediation of the node was
-- refused (too many of its pool unhealthy, quorum at risk, another
-- operation running): the reconciler writes an audit event when the
-- reason changes, not every minute it stays the same.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS health_reported_at   timestamptz,
    ADD COLUMN IF NOT EXISTS health_checks        jsonb CHECK (health_checks IS NULL OR jsonb_typeof(health_checks) = 'object'),
    ADD COLUMN IF NOT EXISTS health_failing_since timestamptz,
    ADD COLUMN IF NOT EXISTS remediation_refused  text NOT NULL DEFAULT '' CHECK (octet_length(remediation_refused) <= 2048);

-- The cluster's remediation settings (POST /clusters: unhealthy_after,
-- max_unhealthy_percent): a node unhealthy for longer than
-- unhealthy_after_seconds is replaced (0: never), a worker only while at
-- most max_unhealthy_percent of its pool is unhealthy. Existing clusters
-- take the defaults, as Cluster API's MachineHealthCheck would.
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS unhealthy_after_seconds integer NOT NULL DEFAULT 300
        CHECK (unhealthy_after_seconds = 0 OR unhealthy_after_seconds BETWEEN 60 AND 86400),
    ADD COLUMN IF NOT EXISTS max_unhealthy_percent   integer NOT NULL DEFAULT 40
        CHECK (max_unhealthy_percent BETWEEN 0 AND 100);

-- An audit event may say why (a remediation's decision, taken or refused).
ALTER TABLE audit_events
    ADD COLUMN IF NOT EXISTS reason text NOT NULL DEFAULT '' CHECK (octet_length(reason) <= 2048);

-- The bundle function records a node's reports (a passing one clears
-- the noted refusal); founding sets the settings.
GRANT UPDATE (health_reported_at, health_checks, health_failing_since, remediation_refused) ON kube_nodes TO k8sapi_get_bundle;
GRANT INSERT (unhealthy_after_seconds, max_unhealthy_percent) ON kube_clusters TO k8sapi_create_cluster;

-- The reconciler remediates: it begins a control-plane replacement (as
-- ClustersFunction does for POST .../replace) or a worker's replacement
-- in its pool (a pool operation it drives itself), notes refusals on the
-- node and writes the decisions to the cluster's trail.
GRANT USAGE ON SEQUENCE node_replacements_id_seq, audit_events_id_seq TO k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, old_node_id, old_vm_id, old_node_name) ON node_replacements TO k8sapi_reconciler;
GRANT UPDATE (new_node_id, new_node_name) ON node_replacements TO k8sapi_reconciler;
GRANT INSERT (replacement_id) ON kube_nodes TO k8sapi_reconciler;
GRANT UPDATE (last_ordinal) ON kube_clusters TO k8sapi_reconciler;
GRANT UPDATE (remediation_refused) ON kube_nodes TO k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, at, principal, action, resource, outcome, status, request_id, reason)
    ON audit_events TO k8sapi_reconciler;
-- Every role that appends to the trail names the new column in its insert.
GRANT INSERT (reason) ON audit_events TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_get_bundle;

-- The remediation sweep's query: the ready nodes whose last report is
-- older than a grace or that report a failing check.
CREATE INDEX IF NOT EXISTS kube_nodes_health ON kube_nodes (health_reported_at)
    WHERE health_reported_at IS NOT NULL AND NOT retiring;
