package integration

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// readyWorker fetches w's bundle, has its own keys signed and reports it
// Ready: the certificates it holds, over keys.
func readyWorker(t *testing.T, w *worker, keys workerKeys) nodebootstrap.WorkerCertificates {
	t.Helper()
	w.fetchAs(w.vmID)
	r := w.signAs(w.vmID, keys.csrs(t, w))
	if r.Status != http.StatusOK {
		t.Fatalf("signing = %d %s", r.Status, r.Body)
	}
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	for _, phase := range []string{`{"phase":"kubelet_started"}`, `{"phase":"ready"}`} {
		if r := w.reportAs(w.vmID, phase); r.Status != http.StatusNoContent {
			t.Fatalf("report %s = %d %s", phase, r.Status, r.Body)
		}
	}
	return certs
}

// scaledTo scales w's pool to count and answers its workers.
func scaledTo(t *testing.T, w *worker, count string) []apitypes.WorkerView {
	t.Helper()
	r := stacktest.Do(t, http.MethodPatch, w.s.PoolsURL(w.clusterID, "workers"), `{"count":`+count+`}`, w.s.Bearer(1))
	var p apitypes.NodePool
	if r.JSON(t, &p); r.Status != http.StatusOK {
		t.Fatalf("PATCH count %s = %d %s", count, r.Status, r.Body)
	}
	return p.Nodes
}

// Scaling a pool 2 → 0 → 1 gives the new VM a name (and ordinal) no node
// of the cluster had: the removed workers' one-year certificates, which
// cannot be revoked, name no Node of the cluster. The new VM showing a
// removed worker's certificates and keys renews nothing.
func TestRemovedWorkersNameIsNeverHandedOn(t *testing.T) {
	s := newStack(t)
	old := workerOn(t, s)
	oldKeys := newWorkerKeys(t)
	oldCerts := readyWorker(t, old, oldKeys)
	scaledTo(t, old, "0")
	nodes := scaledTo(t, old, "1")
	if len(nodes) != 1 {
		t.Fatalf("%d workers after scaling to 1", len(nodes))
	}
	n := nodes[0]
	if n.Name == old.node.Name || n.Ordinal <= 3 {
		t.Fatalf("the new worker is %s (ordinal %d); the removed ones were ordinals 2 and 3 (%s)", n.Name, n.Ordinal, old.node.Name)
	}
	imds, access := s.VMCredentials(n.VMID)
	fresh := &worker{node: n, imds: imds, access: access, s: s, clusterID: old.clusterID, vmID: n.VMID}
	readyWorker(t, fresh, newWorkerKeys(t))
	refusedRenewal(t, "the removed worker's certificates", fresh, oldKeys.renewal(t, oldCerts.KubeletClient, oldCerts.KubeletServing),
		http.StatusForbidden, "proof_of_possession_failed")
}

// mintedFor is what a key stolen from the cluster CA, or a certificate
// k8sapi issued to a node that had this name before names were kept
// unique, looks like: the cluster CA's signature over the worker's own
// name, usages and keys, but no certificate k8sapi recorded issuing.
func mintedFor(t *testing.T, s *stack, w *worker, keys workerKeys) nodebootstrap.WorkerRenewalRequest {
	t.Helper()
	c := s.cluster(t, s.founder.Store, w.clusterID)
	opened, err := keyring.Open(t.Context(), s.envelope, &c)
	if err != nil {
		t.Fatal(err)
	}
	is := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now, LeafLifetime: hourLeaves().Lifetime}
	who := pki.Subject{Name: w.node.Name, IPv4: w.node.IPv4}
	mint := func(name pki.Name, pub any) string {
		cert, err := is.Reissue(opened.Trust, name, who, pub)
		if err != nil {
			t.Fatal(err)
		}
		return string(cert)
	}
	return keys.renewal(t, mint(pki.KubeletClient, &keys.client.PublicKey), mint(pki.KubeletServing, &keys.serving.PublicKey))
}

// A worker renews only certificates k8sapi recorded issuing to it, by
// serial: one its cluster CA signed for its name and usages over its own
// keys, but never issued by k8sapi, is refused. A worker founded before
// serials were recorded (none recorded for its identity) renews what it
// holds once; its renewed certificates are recorded, and from then on the
// unrecorded ones are refused.
func TestWorkerRenewalTakesOnlyCertificatesIssuedToIt(t *testing.T) {
	s, clock := renewingStack(t)
	w := workerOn(t, s)
	keys := newWorkerKeys(t)
	readyWorker(t, w, keys)
	minted := mintedFor(t, s, w, keys)
	refusedRenewal(t, "a certificate k8sapi never issued", w, minted, http.StatusForbidden, "proof_of_possession_failed")

	// As on the schema before serials were recorded.
	if _, err := s.pool.Exec(context.Background(), `DELETE FROM node_certificates WHERE node_id = (SELECT id FROM kube_nodes WHERE vm_id = $1)`, w.vmID); err != nil {
		t.Fatal(err)
	}
	clock.Set(45 * time.Minute) // due
	renewed := w.renewAs(w.vmID, minted)
	if renewed.status != http.StatusOK || !slices.Equal(renewed.body.Renewed, []string{string(pki.KubeletClient), string(pki.KubeletServing)}) {
		t.Fatalf("a pre-serial worker's renewal = %d %+v, want both renewed", renewed.status, renewed.body)
	}
	refusedRenewal(t, "an unrecorded certificate once its renewal is recorded", w, minted, http.StatusForbidden, "proof_of_possession_failed")
	again := keys.renewal(t, renewed.body.Certificates[string(pki.KubeletClient)], renewed.body.Certificates[string(pki.KubeletServing)])
	if r := w.renewAs(w.vmID, again); r.status != http.StatusOK {
		t.Errorf("renewing the renewed certificates = %d, want 200", r.status)
	}
}

// assertRecorded: every stored identity's certificate is recorded as
// issued to its node, by serial.
func (s *stack) assertRecorded(t *testing.T) {
	t.Helper()
	rows := s.identityRows(t)
	for _, r := range rows {
		var ok bool
		err := s.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM node_certificates c JOIN kube_nodes n ON n.id = c.node_id
			WHERE n.vm_id = $1 AND c.identity = $2 AND c.serial = $3)`, r.VMID, r.Name, pki.PEMSerial([]byte(r.Cert))).Scan(&ok)
		if err != nil || !ok {
			t.Errorf("vm %d's %s certificate is not recorded as issued to it (%v)", r.VMID, r.Name, err)
		}
	}
	if len(rows) == 0 {
		t.Error("no identity stored")
	}
}

// Every certificate issued to a control-plane node is recorded by serial:
// at founding, in its bundle window, at renewal. A renewal whose stored
// certificate is not the one recorded (as no row k8sapi wrote could be)
// is refused; one whose identity has no serial recorded, as on the schema
// before, is served.
func TestControlPlaneCertificatesAreRecordedAtIssue(t *testing.T) {
	s, clk := renewingStack(t)
	_, vm, b := s.readyNodeWithBundle(t)
	s.assertRecorded(t)
	clk.Set(41 * time.Minute) // due
	if got := s.mustRenew(t, vm, b); len(got.Renewed) == 0 {
		t.Fatal("nothing renewed")
	}
	s.assertRecorded(t)

	ctx := context.Background()
	node := `(SELECT id FROM kube_nodes WHERE vm_id = $1)`
	if _, err := s.pool.Exec(ctx, `UPDATE node_certificates SET serial = 'f' || serial WHERE node_id = `+node, vm.id); err != nil {
		t.Fatal(err)
	}
	refused(t, "a stored certificate not recorded", s.renew(t, vm, b), http.StatusForbidden, "proof_of_possession_failed", "")
	if _, err := s.pool.Exec(ctx, `DELETE FROM node_certificates WHERE node_id = `+node, vm.id); err != nil {
		t.Fatal(err)
	}
	if r := s.renew(t, vm, b); r.Status != http.StatusOK {
		t.Errorf("a renewal with no serial recorded (the schema before) = %d %s, want 200", r.Status, r.Body)
	}
}

// A worker's signed requests are recorded by serial.
func TestWorkerCertificatesAreRecordedAtIssue(t *testing.T) {
	s := newStack(t)
	w := workerOn(t, s)
	certs := readyWorker(t, w, newWorkerKeys(t))
	var serials []string
	if err := s.pool.QueryRow(context.Background(), `SELECT array_agg(serial ORDER BY identity) FROM node_certificates c
		JOIN kube_nodes n ON n.id = c.node_id WHERE n.vm_id = $1`, w.vmID).Scan(&serials); err != nil {
		t.Fatal(err)
	}
	want := []string{pki.PEMSerial([]byte(certs.KubeletServing)), pki.PEMSerial([]byte(certs.KubeletClient))} // kubelet < kubelet-client
	if !slices.Equal(serials, want) {
		t.Errorf("recorded serials %q, want %q", serials, want)
	}
}
