-- One row per control-plane node, and one row per stored identity of a node
-- (the cert table's PhaseFounding entries, named by pki.Name). Adding a stored
-- certificate is a row in the cert table, never a column or a table here.
--
-- Sealed keys move unchanged: their additional data names the org, cluster,
-- purpose ("<pki.Name>-key") and VM, never a table or a column, so every key
-- sealed under etcd_nodes / apiserver_nodes opens from node_identities.
CREATE TABLE kube_nodes (
    id              bigserial PRIMARY KEY,
    kube_cluster_id bigint  NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    vm_id           bigint  NOT NULL UNIQUE,
    ordinal         integer NOT NULL,
    node_name       text    NOT NULL,
    UNIQUE (kube_cluster_id, ordinal)
);

CREATE TABLE node_identities (
    node_id    bigint NOT NULL REFERENCES kube_nodes (id) ON DELETE CASCADE,
    name       text   NOT NULL, -- a pki.Name: etcd-peer, apiserver, ...
    cert       text   NOT NULL,
    key_sealed bytea  NOT NULL, -- empty once the cluster is crypto-shredded
    PRIMARY KEY (node_id, name)
);

-- Founding wrote both facets of a node in one transaction, so the two tables
-- agree on every node; UNION folds the pair into one row, and a node the two
-- disagree on fails the unique constraints (and the whole migration) rather
-- than being guessed at.
INSERT INTO kube_nodes (kube_cluster_id, vm_id, ordinal, node_name)
SELECT kube_cluster_id, vm_id, ordinal, node_name FROM etcd_nodes
UNION
SELECT kube_cluster_id, vm_id, ordinal, node_name FROM apiserver_nodes
ORDER BY 1, 3;

INSERT INTO node_identities (node_id, name, cert, key_sealed)
SELECT n.id, 'etcd-peer', e.cert, e.key_sealed
FROM etcd_nodes e JOIN kube_nodes n ON n.vm_id = e.vm_id;

INSERT INTO node_identities (node_id, name, cert, key_sealed)
SELECT n.id, 'apiserver', a.cert, a.key_sealed
FROM apiserver_nodes a JOIN kube_nodes n ON n.vm_id = a.vm_id;

DROP TABLE etcd_nodes;
DROP TABLE apiserver_nodes;
