-- When each node reached each bootstrap phase, so the operator sees where
-- a bootstrap's time went (GET /clusters/{id}: each step's start, end and
-- length, and what is running now).
--
-- phase_times maps a phase (as kube_nodes.phase spells it) to when the
-- node first reached it in its current bootstrap: written by the same
-- guarded UPDATE that moves the phase (a report costs no extra round trip),
-- emptied when the bootstrap is re-opened. A phase the node skipped has no
-- entry. Nodes that exist when this runs start empty: nothing was recorded
-- of their phases' times. It depends only on 003 (phase) and 006 (the
-- re-open), so it may take any number after them.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS phase_times jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(phase_times) = 'object');

-- The functions that move a node's phase (GetBundleFunction: reports and
-- bundle_fetched) and re-open its bootstrap (ClustersFunction) write the
-- times with it; SELECT on kube_nodes is theirs already (011).
GRANT UPDATE (phase_times) ON kube_nodes TO k8sapi_get_bundle, k8sapi_clusters;
