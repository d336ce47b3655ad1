-- A worker's health report is answered with the drain bound of the running
-- upgrade that retires it (its drain_timeout_seconds; docs/UPGRADES.md):
-- the bundle function reads the columns that say so, in the report's own
-- statement. No new column: the bound is migration 031's.
GRANT SELECT (kube_cluster_id, state, pass_version, drain_timeout_seconds) ON cluster_upgrades TO k8sapi_get_bundle;
