-- A retired node's etcd identities are revoked (issue 43, item 2): the
-- serials of every etcd-CA certificate it was ever given go on a CRL signed
-- by the cluster's etcd CA, which every member's etcd reads at each
-- handshake (--client-crl-file, --peer-crl-file; docs/REPLACE-NODE.md).
--
-- Numbered 032 (written as 022, renumbered as the migrations before it landed first): it depends on 002 (node_identities) and 011 (the roles).

-- Every etcd-CA certificate a node was given, as it was stored: a renewal
-- replaces a row's certificate over the same key and a re-opened window
-- replaces a row's key, but the earlier certificate still verifies until
-- it expires, so the row alone does not say what to revoke. A trigger,
-- not the Go writes, keeps it: every path that stores an identity
-- (founding, a window's first fetch, renewal, a replacement) is covered,
-- including ones added later. No reference to kube_nodes: the record
-- must outlive the node's row, which is what retiring a node removes.
CREATE TABLE IF NOT EXISTS etcd_ca_certificates (
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    node_id         bigint      NOT NULL,
    name            text        NOT NULL,
    cert            text        NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node_id, name, cert)
);

-- The names are the cert table's leaves signed by the etcd CA
-- (pki.EtcdCALeaves); internal/integration holds the two lists equal.
-- SECURITY DEFINER: every role that writes node_identities records here
-- without a grant of its own on the record.
CREATE OR REPLACE FUNCTION record_etcd_ca_certificate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.name IN ('etcd-peer', 'apiserver-etcd-client') AND NEW.cert <> '' THEN
        INSERT INTO etcd_ca_certificates (kube_cluster_id, node_id, name, cert)
        SELECT n.kube_cluster_id, n.id, NEW.name, NEW.cert FROM kube_nodes n WHERE n.id = NEW.node_id
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION record_etcd_ca_certificate() FROM PUBLIC;

DROP TRIGGER IF EXISTS node_identities_etcd_ca ON node_identities;
CREATE TRIGGER node_identities_etcd_ca AFTER INSERT OR UPDATE OF cert ON node_identities
    FOR EACH ROW EXECUTE FUNCTION record_etcd_ca_certificate();

-- What the nodes hold today is recorded too: their earlier certificates
-- are gone, their current ones are what a thief of their disk has.
INSERT INTO etcd_ca_certificates (kube_cluster_id, node_id, name, cert)
SELECT n.kube_cluster_id, n.id, i.name, i.cert FROM node_identities i JOIN kube_nodes n ON n.id = i.node_id
WHERE i.name IN ('etcd-peer', 'apiserver-etcd-client') AND i.cert <> ''
ON CONFLICT DO NOTHING;

-- The serials revoked, one row each, kept until the certificate expires
-- (a CRL need not list an expired certificate: etcd refuses it anyway).
CREATE TABLE IF NOT EXISTS etcd_revocations (
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    serial          text        NOT NULL CHECK (serial ~ '^[0-9a-f]{1,40}$'),
    node_name       text        NOT NULL,
    not_after       timestamptz NOT NULL,
    revoked_at      timestamptz NOT NULL,
    PRIMARY KEY (kube_cluster_id, serial)
);

-- The cluster's current CRL, signed by its etcd CA when a node is retired
-- (the reconciler opens the CA; the VM route serves it without a key).
-- number only grows: a node installs a CRL only over a lower number. A
-- cluster with no row has revoked nothing: its bundles carry an empty CRL
-- of number 0, signed at the fetch.
CREATE TABLE IF NOT EXISTS etcd_crls (
    kube_cluster_id bigint      PRIMARY KEY REFERENCES kube_clusters (id) ON DELETE CASCADE,
    number          bigint      NOT NULL CHECK (number > 0),
    crl_pem         text        NOT NULL CHECK (octet_length(crl_pem) <= 262144),
    signed_at       timestamptz NOT NULL
);

-- ReconcilerFunction retires nodes: it reads what they were given and
-- writes the revocations and the CRL. GetBundleFunction serves the CRL
-- with every bundle and on the CRL route.
GRANT SELECT ON etcd_ca_certificates, etcd_revocations, etcd_crls TO k8sapi_reconciler;
GRANT INSERT, DELETE ON etcd_revocations TO k8sapi_reconciler;
GRANT INSERT, UPDATE ON etcd_crls TO k8sapi_reconciler;
GRANT SELECT ON etcd_crls TO k8sapi_get_bundle;
