-- DEV ONLY. What the token service grants k8sapi's function roles
-- (k8sapi migration 011) on its tables: a function authenticating a caller
-- reads the token's hash row, nothing else. In production the platform team
-- runs the same grants on its own tables (SECURITY.md). Its own set, applied
-- after k8sapi's, because the roles are k8sapi's and exist only after 011,
-- while the stand-in tables must exist before k8sapi's migrations.
GRANT SELECT (hash, org_id, vm_id, scope, expires_at, revoked_at) ON principal_tokens
    TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_get_bundle;
GRANT SELECT (hash, vm_id, org_id, expiry_at) ON imds_tokens TO k8sapi_get_bundle;
