-- PATCH /clusters/{id} changes a cluster's remediation settings after its
-- founding (unhealthy_after, max_unhealthy_percent; docs/NODE-HEALTH.md).
-- The columns and their CHECKs are migration 028's; the reconciler reads
-- them on every sweep, so a change is in force on the next.
GRANT UPDATE (unhealthy_after_seconds, max_unhealthy_percent) ON kube_clusters TO k8sapi_clusters;
