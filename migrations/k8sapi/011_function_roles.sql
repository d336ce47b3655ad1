-- One database role per function, with only the rights its queries need
-- (issue 22, "least privilege underneath"). A function whose code is taken
-- over can then do no more to the database than its own statements do: the
-- bundle function cannot delete a cluster, the health function reads no
-- table at all, and nothing but the migrator (the owner) changes the schema.
--
-- The roles are NOLOGIN groups; each function logs in as a user of its own
-- that is a member of its group and of nothing else (internal/dbroles names
-- them; template.yaml gives each function its own secret). Roles belong to
-- the whole server, grants to this database: creating a role must survive
-- another database's migration creating it at the same moment (tests
-- migrate many databases at once), so a role that exists is taken as is.
-- A concurrent CREATE ROLE fails with unique_violation (it waited on the
-- catalog index), a later one with duplicate_object.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['k8sapi_create_cluster', 'k8sapi_clusters', 'k8sapi_get_bundle',
                             'k8sapi_health', 'k8sapi_reconciler'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
        -- Not left to PUBLIC's default: a hardened database revokes it.
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), r);
    END LOOP;
END $$;

-- The grants, one line per right. To let a function use a new table or
-- column, add its line here (or in the migration that adds the column, if
-- that one runs after this). Column lists name exactly what the function's
-- statements write; SELECT is on whole tables where a statement reads every
-- column (store.clusterColumns).
--
-- Where each comes from: internal/store's statements, by the use cases each
-- function's main wires (internal/wiring, functions/*/main.go).

-- CreateClusterFunction: POST /clusters (founding.Service.Found: reserve the
-- id, commit the cluster and its intended nodes, the fenced steps, an undo
-- that shreds; a replay reads the cluster back).
GRANT USAGE ON SEQUENCE kube_clusters_id_seq, kube_nodes_id_seq TO k8sapi_create_cluster;
GRANT SELECT ON kube_clusters, kube_nodes, node_identities TO k8sapi_create_cluster;
GRANT INSERT (id, org_id, project_id, name, control_plane_dns_name, status, key_algorithm, kubernetes_version,
    cluster_domain, service_cidr, pod_cidr, control_plane_count, security_group_ids, kms_key_id, wrapped_data_key,
    ca_cert, ca_key_sealed, etcd_ca_cert, etcd_ca_key_sealed, front_proxy_ca_cert, front_proxy_ca_key_sealed,
    service_account_pub, service_account_key_sealed, idempotency_key, request_fingerprint, founding_spec,
    lease_owner, lease_until, resumable, cni, artifacts, secrets_encryption_key_sealed) ON kube_clusters TO k8sapi_create_cluster;
GRANT UPDATE (security_group_requested, created_security_group_id, security_group_ids, status, status_reason,
    lease_owner, lease_until, resumable, dns_configured, dns_error, updated_at,
    wrapped_data_key, ca_key_sealed, etcd_ca_key_sealed, front_proxy_ca_key_sealed, service_account_key_sealed,
    secrets_encryption_key_sealed)
    ON kube_clusters TO k8sapi_create_cluster;
GRANT INSERT (kube_cluster_id, ordinal, node_name) ON kube_nodes TO k8sapi_create_cluster;
GRANT UPDATE (create_requested, vm_id, ipv4, ipv6, public_ipv4) ON kube_nodes TO k8sapi_create_cluster;
GRANT INSERT (node_id, name, cert, key_sealed, not_after) ON node_identities TO k8sapi_create_cluster;
GRANT UPDATE (cert, key_sealed) ON node_identities TO k8sapi_create_cluster;

-- ClustersFunction: list, read, delete (a lease, the teardown, the keys
-- overwritten), a node's bootstrap view and its re-open.
GRANT SELECT ON kube_clusters, kube_nodes, node_identities, bootstrap_fetches TO k8sapi_clusters;
GRANT UPDATE (status, status_reason, lease_owner, lease_until, resumable, updated_at,
    wrapped_data_key, ca_key_sealed, etcd_ca_key_sealed, front_proxy_ca_key_sealed, service_account_key_sealed,
    secrets_encryption_key_sealed)
    ON kube_clusters TO k8sapi_clusters;
GRANT UPDATE (phase, message, updated_at, bootstrap_opened_at, ready_at) ON kube_nodes TO k8sapi_clusters;
GRANT UPDATE (key_sealed) ON node_identities TO k8sapi_clusters;

-- GetBundleFunction: a VM's bundle (its cluster and nodes read, its
-- window's identities stored, the fetch recorded), its status reports, its
-- renewals, and its calls counted. It never writes a cluster.
GRANT USAGE ON SEQUENCE bootstrap_fetches_id_seq TO k8sapi_get_bundle;
GRANT SELECT ON kube_clusters, kube_nodes, node_identities TO k8sapi_get_bundle;
GRANT INSERT (node_id, vm_id, request_id, outcome, fetched_at) ON bootstrap_fetches TO k8sapi_get_bundle;
GRANT UPDATE (phase, message, updated_at, ready_at) ON kube_nodes TO k8sapi_get_bundle;
GRANT INSERT (node_id, name, cert, key_sealed, not_after, window_opened_at, bootstrap_only)
    ON node_identities TO k8sapi_get_bundle;
GRANT UPDATE (cert, key_sealed, not_after, window_opened_at, bootstrap_only) ON node_identities TO k8sapi_get_bundle;
GRANT SELECT, INSERT, UPDATE ON vm_call_limits TO k8sapi_get_bundle;

-- ReconcilerFunction: claims an operation whose lease ran out and finishes
-- or undoes it (every founding step and every deletion step).
GRANT SELECT ON kube_clusters, kube_nodes, node_identities TO k8sapi_reconciler;
GRANT UPDATE (security_group_requested, created_security_group_id, security_group_ids, status, status_reason,
    lease_owner, lease_until, resumable, dns_configured, dns_error, updated_at,
    wrapped_data_key, ca_key_sealed, etcd_ca_key_sealed, front_proxy_ca_key_sealed, service_account_key_sealed,
    secrets_encryption_key_sealed)
    ON kube_clusters TO k8sapi_reconciler;
GRANT UPDATE (create_requested, vm_id, ipv4, ipv6, public_ipv4) ON kube_nodes TO k8sapi_reconciler;
GRANT INSERT (node_id, name, cert, key_sealed, not_after) ON node_identities TO k8sapi_reconciler;
GRANT UPDATE (cert, key_sealed) ON node_identities TO k8sapi_reconciler;

-- HealthFunction: nothing. Its deep check pings the connection only.
