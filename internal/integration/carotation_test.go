package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// rotationStack is a stack on a clock the test moves, whose rotations
// wait a minute before their distrust, and whose control-plane name's
// record lives a second.
func rotationStack(t *testing.T) (*stack, *fixedClock) {
	c := newClock(time.Now().Truncate(time.Second))
	s := newStack(t, func(cfg *stacktest.Config) {
		cfg.Now, cfg.Leaves, cfg.CADistrustWait, cfg.DNSTTL = c.Now, hourLeaves(), time.Minute, 1
	})
	return s, c
}

// readyNodes founds three nodes; each fetches its bundle and reports ready.
func (s *stack) readyNodes(t *testing.T) (int64, []vmProof, []bundleBody) {
	res := s.Found(1, stacktest.ThreeNodes)
	var vms []vmProof
	var bundles []bundleBody
	for _, id := range res.ControlPlaneVMIDs {
		vm := s.proof(id)
		var b bundleBody
		s.FetchBundle(vm.id, vm.imds, vm.access).JSON(t, &b)
		s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
		vms, bundles = append(vms, vm), append(bundles, b)
	}
	return res.ClusterID, vms, bundles
}

// rotationOf is the cluster's roots and rotation as GET /clusters/{id} shows them.
func (s *stack) rotationOf(t *testing.T, id int64) apitypes.ClusterView {
	t.Helper()
	var v apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1)).JSON(t, &v)
	if v.CARotation == nil {
		t.Fatal("GET /clusters/{id}: no ca_rotation")
	}
	return v
}

// step moves the clock past the reconciler's retry wait and runs it.
func (s *stack) step(t *testing.T, c *fixedClock) {
	c.Set(time.Second)
	s.reconcile(t)
}

// wantPhase checks the rotation's phase and reason (the message holding
// each of names).
func wantPhase(t *testing.T, v apitypes.ClusterView, phase, reason string, names ...string) {
	t.Helper()
	r := v.CARotation
	if r.Phase != phase || r.Reason != reason {
		t.Fatalf("rotation at %s (%s: %s), want %s (%s)", r.Phase, r.Reason, r.Message, phase, reason)
	}
	for _, n := range names {
		if !strings.Contains(r.Message, n) {
			t.Fatalf("rotation's message %q does not name %s", r.Message, n)
		}
	}
}

// renewAll renews every node as its renewal script would, and returns
// the answers.
func (s *stack) renewAll(t *testing.T, vms []vmProof, bundles []bundleBody) []renewalBody {
	var out []renewalBody
	for i, vm := range vms {
		out = append(out, s.mustRenew(t, vm, bundles[i]))
	}
	return out
}

// chainsTo says whether certPEM verifies under exactly the roots in bundlePEM.
func chainsTo(t *testing.T, certPEM, bundlePEM string) bool {
	t.Helper()
	cert, err := pki.ParseCert([]byte(certPEM))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(bundlePEM))
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: cert.NotBefore.Add(time.Minute),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

func certCount(t *testing.T, bundlePEM string) int {
	t.Helper()
	certs, err := pki.ParseCerts([]byte(bundlePEM))
	if err != nil {
		t.Fatal(err)
	}
	return len(certs)
}

// A rotation of all four roots on a running three-node cluster: each
// phase waits for every node's renewal under it (a node that has not
// renewed holds it, named), the trust files carry old and new until the
// distrust, leaves are signed by the new from signing on, the distrust
// waits out the wait, and at the end only the new roots are trusted and
// the old keys are overwritten.
func TestCARotationWaitsForEveryNodeAndEndsOnTheNewRoots(t *testing.T) {
	s, c := rotationStack(t)
	id, vms, bundles := s.readyNodes(t)
	oldCA, oldEtcdCA := bundles[0].Files[bundle.CertPath(pki.ClusterCA)], bundles[0].Files[bundle.CertPath(pki.EtcdCA)]
	var signedCRL int64
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", "", s.Bearer(1))
	if r.Status != http.StatusAccepted {
		t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	if again := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", "", s.Bearer(1)); again.Status != http.StatusConflict ||
		again.ErrorCode(t) != "operation_in_progress" {
		t.Fatalf("a second rotate-ca: %d %s", again.Status, again.Body)
	}
	s.trustingWaitsForEveryNode(t, c, id, vms, bundles, oldCA)

	// Signing: every leaf under the new CA, still trusted beside the old;
	// the control plane gets the new signer.
	for _, got := range s.renewAll(t, vms, bundles) {
		trust := got.Trust[bundle.CertPath(pki.ClusterCA)]
		if chainsTo(t, got.Certificates[string(pki.APIServer)], oldCA) || !chainsTo(t, got.Certificates[string(pki.APIServer)], trust) {
			t.Fatal("signing: the apiserver certificate is not the new CA's")
		}
		if got.Trust[bundle.ServiceAccountKeyPath] == "" || certCount(t, got.Trust[bundle.CertPath(pki.EtcdCA)]) != 2 {
			t.Fatal("signing: no new signer, or etcd-ca.pem is not old and new")
		}
		signedCRL = wantEtcdOfTheNewCA(t, got, oldEtcdCA, 0)
	}
	s.step(t, c)
	wantPhase(t, s.rotationOf(t, id), "signing", "WaitingForTokens")
	c.Set(2 * time.Minute)
	s.step(t, c)
	wantPhase(t, s.rotationOf(t, id), "distrusting", "NodeNotReported")
	var newCA string
	for _, got := range s.renewAll(t, vms, bundles) {
		newCA = got.Trust[bundle.CertPath(pki.ClusterCA)]
		if got.Trust[bundle.ServiceAccountKeyPath] != "" {
			t.Fatal("distrusting: the signer's key answered again")
		}
		if n := certCount(t, newCA); n != 1 {
			t.Fatalf("distrusting: ca.pem holds %d certificates, want the new only", n)
		}
		if chainsTo(t, got.Certificates[string(pki.APIServer)], oldCA) {
			t.Fatal("distrusting: a leaf chains to the old CA")
		}
		if certCount(t, got.Trust[bundle.CertPath(pki.EtcdCA)]) != 1 {
			t.Fatal("distrusting: etcd-ca.pem is not the new etcd CA alone")
		}
		wantEtcdOfTheNewCA(t, got, oldEtcdCA, signedCRL)
	}
	s.step(t, c)
	v := s.rotationOf(t, id)
	if v.CARotation.Phase != "done" || v.CARotation.State != "succeeded" {
		t.Fatalf("rotation ended %+v", v.CARotation)
	}
	for _, root := range v.CARoots {
		if len(root.Generations) != 2 || root.Generations[0].State != "retired" || root.Generations[1].State != "current" {
			t.Fatalf("root %s after the rotation: %+v", root.Root, root.Generations)
		}
	}
	s.wantOldKeysShredded(t, id)
	s.wantAdminKubeconfigOfTheNewCA(t, id, newCA)
	s.retireAfterTheRotation(t, c, id, signedCRL)
}

// retireAfterTheRotation shrinks the rotated cluster to one member: the
// CRL each retirement signs opens the etcd CA's current generation (the
// founding's columns are shredded), so the last member is served a CRL
// the new etcd CA signed, numbered past the rotation's (signing's, the
// distrust's, one per retirement).
func (s *stack) retireAfterTheRotation(t *testing.T, c *fixedClock, id, above int64) {
	t.Helper()
	if r := stacktest.Do(t, http.MethodPatch, s.api.URL+"/clusters/"+itoa(id), `{"control_plane_count":1}`, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("scale to 1 = %d %s, want 202", r.Status, r.Body)
	}
	for range 40 {
		s.step(t, c)
		if vms := s.getCluster(t, id).ControlPlaneVMIDs; len(vms) == 1 && s.getCluster(t, id).ControlPlaneCount == 1 {
			break
		}
		s.playRemovingMember(t, s.getCluster(t, id).ControlPlaneVMIDs)
	}
	vm := s.proof(s.getCluster(t, id).ControlPlaneVMIDs[0])
	var crl struct {
		Number int64  `json:"number"`
		CRL    string `json:"crl"`
	}
	stacktest.Do(t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/etcd-crl", "", map[string]string{
		"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access}).JSON(t, &crl)
	var current string
	if err := s.pool.QueryRow(t.Context(), `SELECT cert FROM ca_generations WHERE kube_cluster_id = $1 AND root = 'etcd-ca' AND state = 'current'`, id).Scan(&current); err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCert([]byte(current))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pki.ParseCRL([]byte(crl.CRL), cert); err != nil || crl.Number != above+3 {
		t.Fatalf("etcd CRL %d after two retirements (%v), want the current etcd CA's, number %d", crl.Number, err, above+3)
	}
}

// trustingWaitsForEveryNode drives the trusting phase: new generations
// beside the old, trust files of both, leaves of the old; two of three
// nodes renew (the endpoint, the first, is asked last) and the rotation
// holds for the third, named; then it signs.
func (s *stack) trustingWaitsForEveryNode(t *testing.T, c *fixedClock, id int64, vms []vmProof, bundles []bundleBody, oldCA string) {
	t.Helper()
	s.step(t, c)
	s.wantHealthAnswer(t, vms[1], bundle.RenewDue)
	s.wantHealthAnswer(t, vms[0], "") // the endpoint is asked last
	s.wantHealthAnswer(t, vms[2], "") // one control-plane node at a time
	v := s.rotationOf(t, id)
	wantPhase(t, v, "trusting", "NodeNotReported", vms0Names(v)...)
	for _, root := range v.CARoots {
		if len(root.Generations) != 2 || root.Generations[0].State != "current" || root.Generations[1].State != "next" {
			t.Fatalf("root %s in trusting: %+v", root.Root, root.Generations)
		}
	}

	// Two of three nodes renew: the rotation holds for the third.
	for _, i := range []int{1, 2} {
		got := s.mustRenew(t, vms[i], bundles[i])
		if n := certCount(t, got.Trust[bundle.CertPath(pki.ClusterCA)]); n != 2 {
			t.Fatalf("trusting: ca.pem holds %d certificates, want old and new", n)
		}
		if !chainsTo(t, got.Certificates[string(pki.APIServer)], oldCA) {
			t.Fatal("trusting: the apiserver certificate is not signed by the old CA")
		}
	}
	s.step(t, c)
	late := bundles[0].NodeName
	wantPhase(t, s.rotationOf(t, id), "trusting", "NodeNotReported", late)
	if strings.Contains(s.rotationOf(t, id).CARotation.Message, bundles[1].NodeName) {
		t.Fatal("the hold names a node that renewed")
	}
	s.wantHealthAnswer(t, vms[0], "") // the name just moved off it: asked once the record's TTL passed
	c.Set(time.Second)
	s.wantHealthAnswer(t, vms[1], "")
	s.wantHealthAnswer(t, vms[0], bundle.RenewDue)
	s.mustRenew(t, vms[0], bundles[0])
	s.step(t, c)
	wantPhase(t, s.rotationOf(t, id), "signing", "NodeNotReported")

}

// vms0Names is every node's name in the rotation's view.
func vms0Names(v apitypes.ClusterView) []string {
	var out []string
	for _, n := range v.CARotation.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// wantEtcdOfTheNewCA checks a control-plane renewal answer from signing
// on: the etcd leaves chain to the newest etcd CA of etcd-ca.pem, not to
// oldEtcdCA, and the etcd CRL answered with the trust files is signed by
// that newest generation (what a member's etcd unit verifies against
// etcd-ca.pem, the new root alone after the distrust), with a number above
// above; it returns that number.
func wantEtcdOfTheNewCA(t *testing.T, got renewalBody, oldEtcdCA string, above int64) int64 {
	t.Helper()
	certs, err := pki.ParseCerts([]byte(got.Trust[bundle.CertPath(pki.EtcdCA)]))
	if err != nil {
		t.Fatal(err)
	}
	newest := certs[len(certs)-1]
	newPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: newest.Raw}))
	for _, leaf := range pki.EtcdCALeaves() {
		if c, ok := got.Certificates[string(leaf)]; ok && (chainsTo(t, c, oldEtcdCA) || !chainsTo(t, c, newPEM)) {
			t.Fatalf("%s is not the new etcd CA's", leaf)
		}
	}
	if _, ok := got.Certificates[string(pki.EtcdPeer)]; !ok {
		t.Fatal("no etcd peer certificate re-issued")
	}
	crl, err := pki.ParseCRL([]byte(got.Trust[bundle.EtcdCRLBundlePath]), newest)
	if err != nil {
		t.Fatalf("the answered etcd CRL is not the new etcd CA's: %v", err)
	}
	if crl.Number.Int64() <= above {
		t.Fatalf("etcd CRL number %d, want above %d", crl.Number.Int64(), above)
	}
	return crl.Number.Int64()
}

// wantOldKeysShredded checks no generation 1 key is left: neither its row
// nor the cluster's column.
func (s *stack) wantOldKeysShredded(t *testing.T, id int64) {
	t.Helper()
	var left int
	err := s.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM ca_generations WHERE kube_cluster_id = $1 AND state = 'retired' AND octet_length(key_sealed) > 0)
		+ (SELECT count(*) FROM kube_clusters WHERE id = $1 AND (octet_length(ca_key_sealed) > 0 OR octet_length(etcd_ca_key_sealed) > 0
			OR octet_length(front_proxy_ca_key_sealed) > 0 OR octet_length(service_account_key_sealed) > 0))`, id).Scan(&left)
	if err != nil || left != 0 {
		t.Fatalf("old keys left: %d (%v)", left, err)
	}
}

// wantAdminKubeconfigOfTheNewCA issues an admin kubeconfig after the
// rotation: it names the new CA only, and its certificate chains to it.
func (s *stack) wantAdminKubeconfigOfTheNewCA(t *testing.T, id int64, newCA string) {
	t.Helper()
	var cred apitypes.IssuedCredential
	r := s.askCredential(id, signedCSR(t, newKey(t), &x509.CertificateRequest{}), s.Bearer(1))
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("credential after the rotation: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &cred)
	if cred.CertificateAuthority != newCA || !chainsTo(t, cred.Certificate, newCA) {
		t.Fatal("the operator's credential after the rotation is not of the new CA")
	}
}

// An abort after signing began steps back: the old CA signs again, every
// node re-signs under it, and after the wait the new generation is
// retired; the cluster ends on its first generation.
func TestCARotationAbortedAfterSigningStepsBack(t *testing.T) {
	s, c := rotationStack(t)
	id, vms, bundles := s.readyNodes(t)
	oldCA := bundles[0].Files[bundle.CertPath(pki.ClusterCA)]
	body := `{"roots":["cluster"]}`
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", body, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	s.step(t, c)
	s.renewAll(t, vms, bundles)
	s.step(t, c)
	s.renewAll(t, vms, bundles)
	wantPhase(t, s.rotationOf(t, id), "signing", "NodeNotReported")
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca/abort", "", s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("abort: %d %s", r.Status, r.Body)
	}
	s.step(t, c)
	wantPhase(t, s.rotationOf(t, id), "untrusting", "NodeNotReported")
	for _, got := range s.renewAll(t, vms, bundles) {
		if !chainsTo(t, got.Certificates[string(pki.APIServer)], oldCA) {
			t.Fatal("untrusting: the apiserver certificate is not the old CA's again")
		}
	}
	s.step(t, c)
	wantPhase(t, s.rotationOf(t, id), "untrusting", "WaitingForTokens")
	c.Set(2 * time.Minute)
	s.step(t, c)
	v := s.rotationOf(t, id)
	if v.CARotation.Phase != "aborted" || v.CARotation.Reason != "Aborted" {
		t.Fatalf("aborted rotation: %+v", v.CARotation)
	}
	if g := v.CARoots[0].Generations; len(g) != 2 || g[0].State != "current" || g[1].State != "retired" {
		t.Fatalf("cluster CA after the abort: %+v", g)
	}
	if g := v.CARoots[1].Generations; len(g) != 1 || g[0].State != "current" {
		t.Fatalf("etcd CA, not rotated: %+v", g)
	}
}

// Refusals with nothing written: unknown roots (named), another operation.
func TestCARotationRefusals(t *testing.T) {
	s, _ := rotationStack(t)
	id, _, _ := s.readyNodes(t)
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", `{"roots":["cluster","kubelet","ssh"]}`, s.Bearer(1))
	if r.Status != http.StatusUnprocessableEntity || r.ErrorCode(t) != "unknown_roots" || !strings.Contains(string(r.Body), "kubelet, ssh are not") {
		t.Fatalf("unknown roots: %d %s", r.Status, r.Body)
	}
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca/abort", "", s.Bearer(1)); r.Status != http.StatusConflict ||
		r.ErrorCode(t) != "no_ca_rotation" {
		t.Fatalf("abort without a rotation: %d %s", r.Status, r.Body)
	}
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", "", s.Bearer(2)); r.Status != http.StatusNotFound {
		t.Fatalf("another org's: %d %s", r.Status, r.Body)
	}
}

// The CLI starts a rotation (a root it does not know is refused, named),
// and describe shows the roots' generations and the rotation.
func TestCLIRotatesCA(t *testing.T) {
	s, c := rotationStack(t)
	id, _, _ := s.readyNodes(t)
	if code, out, errOut := s.k8sapiCLI("rotate-ca", itoa(id), "--roots", "cluster,kubelet"); code == 0 || !strings.Contains(errOut, "kubelet is not a root") {
		t.Fatalf("rotate-ca --roots cluster,kubelet: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := s.k8sapiCLI("rotate-ca", itoa(id), "--roots", "cluster,service-account")
	if code != 0 || !strings.Contains(out, "(cluster, service-account) is trusting") {
		t.Fatalf("rotate-ca: exit %d\n%s\n%s", code, out, errOut)
	}
	s.step(t, c)
	code, out, errOut = s.k8sapiCLI("describe", "cluster", itoa(id))
	if code != 0 || !strings.Contains(out, "1 current, 2 next") || !strings.Contains(out, "trusting (NodeNotReported)") {
		t.Fatalf("describe: exit %d\n%s\n%s", code, out, errOut)
	}
}

// wantHealthAnswer: vm's health report is answered 204 with want in its
// renewal header ("": none).
func (s *stack) wantHealthAnswer(t *testing.T, vm vmProof, want string) {
	t.Helper()
	r := s.VMCall(http.MethodPost, bundle.HealthPathTemplate, vm.id, vm.imds, vm.access, cpHealthy)
	if r.Status != http.StatusNoContent || r.Header.Get(bundle.RenewHeader) != want {
		t.Fatalf("health report: %d, %s %q, want %q", r.Status, bundle.RenewHeader, r.Header.Get(bundle.RenewHeader), want)
	}
}

// A worker applies each phase through its own renewal route: it is
// answered the cluster CA's bundle, its certificates of the old CA are
// still taken as its own, and from signing on it is issued certificates
// of the new CA; the pool's other worker, which never renewed, holds the
// rotation, named.
func TestCARotationOfAWorker(t *testing.T) {
	s, c := rotationStack(t)
	w := workerOn(t, s)
	keys := newWorkerKeys(t)
	r := w.signAs(w.vmID, keys.csrs(t, w))
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	for _, phase := range []string{`{"phase":"kubelet_started"}`, `{"phase":"ready"}`} {
		w.reportAs(w.vmID, phase)
	}
	cp := s.proof(w.controlPlaneOf(t))
	var b bundleBody
	s.FetchBundle(cp.id, cp.imds, cp.access).JSON(t, &b)
	s.mustReport(cp, `{"phase":"ready"}`, http.StatusNoContent)
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(w.clusterID)+"/rotate-ca", `{"roots":["cluster"]}`, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	s.step(t, c)
	got := w.renewAs(w.vmID, keys.renewal(t, certs.KubeletClient, certs.KubeletServing))
	if got.status != http.StatusOK || certCount(t, got.body.Trust[bundle.CertPath(pki.ClusterCA)]) != 2 {
		t.Fatalf("a worker's renewal while trusting: %d %+v", got.status, got.body.Trust)
	}
	s.mustRenew(t, cp, b)
	s.step(t, c)
	v := s.rotationOf(t, w.clusterID)
	wantPhase(t, v, "trusting", "NodeNotReported")
	if strings.Contains(v.CARotation.Message, w.node.Name) || strings.Contains(v.CARotation.Message, b.NodeName) {
		t.Fatalf("the hold names a node that renewed: %s", v.CARotation.Message)
	}
}
