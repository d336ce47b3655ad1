package faultinjection

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// fetchedNode is what one VM's bundle fetch gave it: the serials of its
// etcd-CA certificates, its etcd CA, and the CRL it carried.
type fetchedNode struct {
	serials []string
	etcdCA  []byte
	crl     []byte
}

func (s *stack) fetchEtcdIdentities(vm int64) fetchedNode {
	s.t.Helper()
	imds, access := s.VMCredentials(vm)
	r := s.FetchBundle(vm, imds, access)
	if r.Status != http.StatusOK {
		s.t.Fatalf("bundle of vm %d: %d %s", vm, r.Status, r.Body)
	}
	var b bundle.Response
	r.JSON(s.t, &b)
	out := fetchedNode{etcdCA: []byte(b.Files[bundle.CertPath(pki.EtcdCA)]), crl: []byte(b.Files[bundle.EtcdCRLBundlePath])}
	for _, name := range pki.EtcdCALeaves() {
		serial, _, err := pki.SerialHex([]byte(b.Files[bundle.CertPath(name)]))
		if err != nil {
			s.t.Fatalf("vm %d's %s: %v", vm, name, err)
		}
		out.serials = append(out.serials, serial)
	}
	return out
}

// etcdCRL is vm's answer on the CRL route.
func (s *stack) etcdCRL(vm int64) stacktest.Response {
	s.t.Helper()
	imds, access := s.VMCredentials(vm)
	return s.VMCall(http.MethodGet, bundle.EtcdCRLPathTemplate, vm, imds, access, "")
}

// listed is the serials of a PEM CRL, checked against the etcd CA, and
// its number.
func (s *stack) listed(crlPEM, etcdCA []byte) (int64, []string) {
	s.t.Helper()
	ca, err := pki.ParseCert(etcdCA)
	if err != nil {
		s.t.Fatal(err)
	}
	crl, err := pki.ParseCRL(crlPEM, ca)
	if err != nil {
		s.t.Fatalf("the CRL: %v\n%s", err, crlPEM)
	}
	var serials []string
	for _, e := range crl.RevokedCertificateEntries {
		serials = append(serials, e.SerialNumber.Text(16))
	}
	slices.Sort(serials)
	return crl.Number.Int64(), serials
}

// A replaced node's etcd-CA serials (its etcd peer certificate and the API
// server's etcd client one) are on the CRL the remaining members are
// served once it is retired, signed by the cluster's etcd CA, and none of
// theirs; before, the bundle carries an empty CRL and the route has none
// (204); the retired VM is no longer answered.
func TestRetiredNodesEtcdSerialsAreOnTheCRLServedToTheOthers(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vms := res.ControlPlaneVMIDs
	old, stays := s.fetchEtcdIdentities(vms[0]), s.fetchEtcdIdentities(vms[1])
	if n, serials := s.listed(stays.crl, stays.etcdCA); n != 0 || len(serials) != 0 {
		t.Fatalf("a founding bundle's CRL is number %d listing %v, want an empty one of number 0", n, serials)
	}
	if r := s.etcdCRL(vms[1]); r.Status != http.StatusNoContent {
		t.Fatalf("CRL route before any retirement: %d %s, want 204", r.Status, r.Body)
	}
	oldIMDS, oldAccess := s.VMCredentials(vms[0]) // its IMDS goes with its VM
	s.markReady(vms...)
	if r := s.replace(res.ClusterID, vms[0]); r.Status != http.StatusAccepted {
		t.Fatalf("replace = %d %s", r.Status, r.Body)
	}
	if rep := s.finishReplacement(); rep.Replaced != 1 {
		t.Fatalf("reconciler reports %+v, want the replacement done", rep)
	}

	r := s.etcdCRL(vms[1])
	if r.Status != http.StatusOK {
		t.Fatalf("CRL route after the retirement: %d %s", r.Status, r.Body)
	}
	var answer struct {
		ClusterID int64  `json:"cluster_id"`
		Number    int64  `json:"number"`
		CRL       string `json:"crl"`
	}
	if err := json.Unmarshal(r.Body, &answer); err != nil {
		t.Fatal(err)
	}
	n, serials := s.listed([]byte(answer.CRL), stays.etcdCA)
	want := slices.Sorted(slices.Values(old.serials))
	if answer.ClusterID != res.ClusterID || answer.Number != 1 || n != 1 || !slices.Equal(serials, want) {
		t.Errorf("CRL %d (number %d, cluster %d) lists %v, want number 1 of cluster %d listing the old node's %v",
			n, answer.Number, answer.ClusterID, serials, res.ClusterID, want)
	}
	for _, serial := range stays.serials {
		if slices.Contains(serials, serial) {
			t.Errorf("a remaining member's serial %s is revoked", serial)
		}
	}
	if r := s.VMCall(http.MethodGet, bundle.EtcdCRLPathTemplate, vms[0], oldIMDS, oldAccess, ""); r.Status < 400 {
		t.Errorf("the retired VM's CRL ask: %d %s, want it refused", r.Status, r.Body)
	}
	third := answer
	if r := s.etcdCRL(vms[2]); r.Status != http.StatusOK || json.Unmarshal(r.Body, &third) != nil || third != answer {
		t.Errorf("the third member is served %d %s, want the same CRL", r.Status, r.Body)
	}
}

// The trigger of migration 032 records exactly the cert table's etcd-CA
// leaves (pki.EtcdCALeaves), whichever path stores an identity, and every
// new certificate of one, not only the first.
func TestEtcdCACertificatesRecordedAreTheCertTablesEtcdCALeaves(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.OneNode)
	ctx := context.Background()
	var nodeID int64
	if err := s.pool.QueryRow(ctx, `SELECT id FROM kube_nodes WHERE vm_id = $1`, res.ControlPlaneVMIDs[0]).Scan(&nodeID); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, spec := range pki.CertList() {
		if !spec.IsCA {
			names = append(names, string(spec.Name))
		}
	}
	for _, cert := range []string{"first", "renewed"} {
		if _, err := s.pool.Exec(ctx, `INSERT INTO node_identities (node_id, name, cert, key_sealed)
			SELECT $1, n, 'test-' || $3 || '-' || n, '\x00' FROM unnest($2::text[]) n
			ON CONFLICT (node_id, name) DO UPDATE SET cert = EXCLUDED.cert`, nodeID, names, cert); err != nil {
			t.Fatal(err)
		}
	}
	var recorded []string
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(cert ORDER BY cert), '{}') FROM etcd_ca_certificates
		WHERE node_id = $1 AND cert LIKE 'test-%'`, nodeID).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, cert := range []string{"first", "renewed"} {
		for _, name := range pki.EtcdCALeaves() {
			want = append(want, "test-"+cert+"-"+string(name))
		}
	}
	slices.Sort(want)
	if !slices.Equal(recorded, want) {
		t.Errorf("recorded %v, want %v", recorded, want)
	}
}
