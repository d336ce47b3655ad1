package store

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// identityArrays are identities as the column arrays one statement unnests.
type identityArrays struct {
	names, certs []string
	serials      []string // each certificate's, as recorded at issue (node_certificates)
	keys         [][]byte
	notAfters    []time.Time
	only         []bool
}

func identityColumns(ids []Identity) identityArrays {
	a := identityArrays{names: make([]string, len(ids)), certs: make([]string, len(ids)), serials: make([]string, len(ids)),
		keys: make([][]byte, len(ids)), notAfters: make([]time.Time, len(ids)), only: make([]bool, len(ids))}
	for i, id := range ids {
		a.names[i], a.certs[i], a.keys[i], a.notAfters[i] = id.Name, id.Cert, id.KeySealed, id.NotAfter
		// A certificate that does not parse records no serial: the CHECK
		// refuses the statement that issues it.
		a.serials[i] = pki.PEMSerial([]byte(id.Cert))
		a.only[i] = id.BootstrapOnly
	}
	return a
}

// CertReplacement asks to replace the certificates of some of one VM's stored
// identities, keys unchanged: each of Replace by name (its Cert and
// NotAfter), only where the row still holds the certificate in Previous
// (same name), the node has been ready in its current bootstrap and its
// cluster is org's and active.
type CertReplacement struct {
	VMID, OrgID int64
	Previous    map[string]string // name → the certificate the renewal read
	Replace     []Identity
}

// RenewIdentities replaces the certificates in one statement, all of them
// or none: it locks the rows the renewal read, and writes only when every
// one of them is still as read, the node still once ready and its cluster
// active. A concurrent renewal of the same node makes the later one write
// nothing (PostgreSQL re-checks a locked row that changed), so a node never
// holds half of one renewal and half of another. It reports whether it
// wrote.
func (s *Store) RenewIdentities(ctx context.Context, r CertReplacement) (bool, error) {
	a := identityColumns(r.Replace)
	previous := make([]string, len(r.Replace))
	for i, id := range r.Replace {
		previous[i] = r.Previous[id.Name]
	}
	tag, err := s.pool.Exec(ctx, `
		WITH node AS (
			SELECT n.id, n.kube_cluster_id FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
			WHERE n.vm_id = $1 AND k.org_id = $2 AND k.status = 'active' AND n.ready_at IS NOT NULL
		), want AS (
			SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[])
				AS u (name, previous, cert, not_after, serial)
		), still AS (
			SELECT i.name FROM node_identities i JOIN node ON i.node_id = node.id
			JOIN want w ON w.name = i.name AND w.previous = i.cert
			FOR UPDATE OF i
		), issued AS (
			`+recordIssued+` SELECT node.kube_cluster_id, node.id, w.name, w.serial FROM node, want w
			WHERE (SELECT count(*) FROM still) = cardinality($3::text[])
			ON CONFLICT DO NOTHING
		)
		UPDATE node_identities i SET cert = w.cert, not_after = w.not_after
		FROM node, want w
		WHERE i.node_id = node.id AND i.name = w.name
		  AND (SELECT count(*) FROM still) = cardinality($3::text[])`,
		r.VMID, r.OrgID, a.names, previous, a.certs, a.notAfters, a.serials)
	if err != nil {
		return false, fmt.Errorf("renewing identities of vm %d: %w", r.VMID, err)
	}
	return tag.RowsAffected() == int64(len(r.Replace)) && len(r.Replace) > 0, nil
}

// recordIssued begins the statement every issue of a node's certificate
// runs with (migration 022): its serial recorded for the node and
// identity, so a renewal can hold a certificate to what k8sapi issued.
const recordIssued = `INSERT INTO node_certificates (kube_cluster_id, node_id, identity, serial)`
