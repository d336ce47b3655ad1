-- The flannel CNI (issue 25 §3, "networking that grows"): the bridge
-- plugin over the subnet the controller manager allocates each Node, and
-- flanneld's host-gw backend routing every Node's subnet, so a node that
-- joins later is reachable from pods on every other node. The CHECK lets
-- it into kube_clusters.cni; internal/clusterfacts holds the choices.
ALTER TABLE kube_clusters DROP CONSTRAINT IF EXISTS kube_clusters_cni_check;
ALTER TABLE kube_clusters ADD CONSTRAINT kube_clusters_cni_check CHECK (cni IN ('cilium', 'bridge', 'flannel'));
