-- An upgrade's addons step (issue 38, item 4; docs/UPGRADES.md): once every
-- API server is at the pass's version, one control-plane node at it (the
-- lowest-ordinal ready one, chosen and recorded by the reconciler before any
-- node is answered: addons_node, addons_asked_at) applies kube-proxy,
-- CoreDNS and the CNI's manifests rendered at the pass's release
-- (GET /bootstrap/control-plane/{vm_id}/addons) and reports the result
-- (POST, same route): addons_version is the release whose addons it
-- applied, addons_failure its short reason when it could not. The step
-- pauses the upgrade on a failure, or when no report came within its bound
-- from addons_asked_at; a resume chooses again.
ALTER TABLE cluster_upgrades
    ADD COLUMN IF NOT EXISTS addons_node        text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS addons_asked_at    timestamptz,
    ADD COLUMN IF NOT EXISTS addons_version     text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS addons_failure     text NOT NULL DEFAULT '' CHECK (octet_length(addons_failure) <= 512),
    ADD COLUMN IF NOT EXISTS addons_reported_at timestamptz;

-- The reconciler chooses the node (and clears a failure as it does);
-- ClustersFunction's resume clears the choice, so the step chooses again;
-- GetBundleFunction reads the choice and records the chosen node's report.
GRANT UPDATE (addons_node, addons_asked_at, addons_failure) ON cluster_upgrades TO k8sapi_reconciler, k8sapi_clusters;
GRANT SELECT (id, kube_cluster_id, state, pass_version, addons_node, addons_version, addons_failure) ON cluster_upgrades TO k8sapi_get_bundle;
GRANT UPDATE (addons_version, addons_failure, addons_reported_at, updated_at) ON cluster_upgrades TO k8sapi_get_bundle;
