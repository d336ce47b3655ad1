-- The cluster's pod network (POST /clusters "cni"): cilium, installed with
-- helm by the initial node, or bridge, the CNI bridge plugin over a pod
-- subnet per node with routes between the nodes. Every bundle renders it, so
-- it is a column of its own rather than only a field of founding_spec.
--
-- Clusters founded before this migration were all Cilium clusters: the
-- default gives them that. ADD COLUMN IF NOT EXISTS carries the CHECK with
-- it, so running this again changes nothing.
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS cni text NOT NULL DEFAULT 'cilium'
        CONSTRAINT kube_clusters_cni_check CHECK (cni IN ('cilium', 'bridge'));
