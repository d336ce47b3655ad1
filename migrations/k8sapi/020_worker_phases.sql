-- A worker's phases (issue 25; docs/NODE-POOLS.md, "How a worker joins"):
-- pending, bundle_fetched, certificates_signed (recorded by k8sapi when it
-- signs the worker's own requests), kubelet_started, ready; failed from
-- any. internal/clusterfacts holds the order and which role passes which
-- phase; this CHECK only keeps anything but a phase out.
ALTER TABLE kube_nodes DROP CONSTRAINT IF EXISTS kube_nodes_phase_check;
ALTER TABLE kube_nodes ADD CONSTRAINT kube_nodes_phase_check
    CHECK (phase IN ('pending', 'bundle_fetched', 'prerequisites_installed', 'certificates_signed', 'etcd_started',
                     'kubelet_started', 'apiserver_ready', 'addons_installed', 'ready', 'failed'));
