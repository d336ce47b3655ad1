package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// worker is one worker of a fresh pool with its VM's proofs.
type worker struct {
	node            apitypes.WorkerView
	imds, access    string
	s               *stack
	clusterID, vmID int64
}

func newWorker(t *testing.T) *worker { return workerOn(t, newStack(t)) }

// workerOn is one worker of a fresh pool of a cluster founded on s.
func workerOn(t *testing.T, s *stack) *worker {
	t.Helper()
	id := s.Found(1, stacktest.OneNode).ClusterID
	n := s.AddPool(1, id, stacktest.TwoWorkers).Nodes[0]
	imds, access := s.VMCredentials(n.VMID)
	return &worker{node: n, imds: imds, access: access, s: s, clusterID: id, vmID: n.VMID}
}

// fetchAs is GET /bootstrap/worker/{vmID} with w's proofs.
func (w *worker) fetchAs(vmID int64) stacktest.Response {
	w.s.t.Helper()
	return w.s.VMCall(http.MethodGet, bundle.WorkerPathTemplate, vmID, w.imds, w.access, "")
}

// signAs is POST /bootstrap/worker/{vmID}/csr with w's proofs.
func (w *worker) signAs(vmID int64, req nodebootstrap.WorkerCSRRequest) stacktest.Response {
	w.s.t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		w.s.t.Fatal(err)
	}
	return w.s.VMCall(http.MethodPost, bundle.WorkerCSRPathTemplate, vmID, w.imds, w.access, string(body))
}

// controlPlane is a control-plane VM of a cluster of w's org, with its proofs.
func (w *worker) controlPlane() *worker {
	cp := w.s.Found(1, stacktest.OneNode).ControlPlaneVMIDs[0]
	imds, access := w.s.VMCredentials(cp)
	return &worker{s: w.s, vmID: cp, imds: imds, access: access}
}

// refused fails the test unless r is the refusal status and code, its
// message starting with msg; it answers the message.
func refused(t *testing.T, what string, r stacktest.Response, status int, code, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	if r.Status != status || e.Error.Code != code || !strings.HasPrefix(e.Error.Message, msg) {
		t.Errorf("%s = %d %s %q, want %d %s %q", what, r.Status, e.Error.Code, e.Error.Message, status, code, msg)
	}
}

// A worker's bundle is facts, a CA certificate and the files its shim
// writes: no private key, no kubeconfig, no admin identity; it names the
// worker, its pool's labels and taints and where to send its certificate
// requests, and its kubelet registers with them.
func TestWorkerBundleHoldsNoPrivateKey(t *testing.T) {
	w := newWorker(t)
	r := w.fetchAs(w.vmID)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("worker bundle = %d %s %s", r.Status, r.Header, r.Body)
	}
	for _, secret := range []string{"PRIVATE KEY", "system:masters", "client-key-data", "admin"} {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("the worker bundle holds %q", secret)
		}
	}
	var b nodebootstrap.WorkerBundle
	r.JSON(t, &b)
	if b.NodeName != w.node.Name || b.IPv4 != w.node.IPv4 || b.NodePool != "workers" || b.Labels["tier"] != "web" || len(b.Taints) != 1 ||
		!strings.HasPrefix(b.CACert, "-----BEGIN CERTIFICATE-----") || b.CSRPath != "/bootstrap/worker/"+itoa(w.vmID)+"/csr" {
		t.Errorf("worker bundle %+v", b)
	}
	for path := range b.Files {
		if strings.HasSuffix(path, "-key.pem") || strings.HasPrefix(path, "/etc/exk8s/kubeconfig/") || strings.HasPrefix(path, "/etc/kubernetes/manifests/") {
			t.Errorf("the worker bundle writes %s", path)
		}
	}
	if b.Files[bundle.CertPath(pki.ClusterCA)] != b.CACert || b.FileModes["/usr/local/bin/exk8s-bootstrap-worker.sh"] != "0755" ||
		b.FileModes["/usr/local/bin/exk8s-drain-node.sh"] != "0755" || b.Files["/etc/systemd/system/exk8s-drain.service"] == "" {
		t.Errorf("the worker bundle's files lack the CA certificate, the worker's script or its drain: %v", b.FileModes)
	}
	if unit := b.Files["/etc/systemd/system/kubelet.service"]; !strings.Contains(unit, "--node-labels="+bundle.WorkerPoolLabel+"=workers,tier=web") ||
		!strings.Contains(unit, "--hostname-override="+w.node.Name) || !strings.Contains(unit, "--register-with-taints=") {
		t.Errorf("the worker's kubelet unit:\n%s", unit)
	}
}

// The worker's own keys and requests, answered by k8sapi, make an identity
// that chains to the CA its bundle wrote, with exactly the names k8sapi
// recorded for it.
func TestWorkerKeysAndBundleMakeItsIdentity(t *testing.T) {
	w := newWorker(t)
	var b nodebootstrap.WorkerBundle
	w.fetchAs(w.vmID).JSON(t, &b)
	own := w.ownCSRs(t)
	r := w.signAs(w.vmID, own)
	if r.Status != http.StatusOK {
		t.Fatalf("signing its own requests = %d %s", r.Status, r.Body)
	}
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	certs.CACert = b.Files[bundle.CertPath(pki.ClusterCA)] // the CA the worker trusts is its bundle's
	assertWorkerCerts(t, certs, own, w.node.Name, w.node.IPv4)
}

// The worker's routes serve workers and the control plane's serve the
// control plane, each VM only for itself.
func TestWorkerRoutesServeTheWorkerAlone(t *testing.T) {
	w := newWorker(t)
	cp := w.controlPlane()
	refused(t, "a control-plane VM's worker bundle", cp.fetchAs(cp.vmID), http.StatusNotFound, "not_found", "no worker for this VM")
	refused(t, "a control-plane VM's CSRs", cp.signAs(cp.vmID, w.ownCSRs(t)), http.StatusNotFound, "not_found", "no worker for this VM")
	for what, r := range map[string]stacktest.Response{
		"a worker's control-plane bundle": w.s.FetchBundle(w.vmID, w.imds, w.access),
		"a worker's status report":        w.s.VMCall(http.MethodPost, bundle.StatusPathTemplate, w.vmID, w.imds, w.access, `{"phase":"ready"}`),
		"a worker's renewal":              w.s.Renew(w.vmID, w.imds, w.access, `{"csrs":{}}`),
	} {
		refused(t, what, r, http.StatusNotFound, "not_found", "no control-plane node for this VM")
	}
	other := w.s.AddPool(1, w.clusterID, strings.Replace(stacktest.TwoWorkers, `"workers"`, `"others"`, 1)).Nodes[0].VMID
	refused(t, "another worker's bundle with this one's proofs", w.fetchAs(other), http.StatusForbidden, "forbidden", "")
	refused(t, "another worker's CSRs with this one's proofs", w.signAs(other, w.ownCSRs(t)), http.StatusForbidden, "forbidden", "")
	refused(t, "no IMDS session", w.s.VMCall(http.MethodGet, bundle.WorkerPathTemplate, w.vmID, "", w.access, ""), http.StatusUnauthorized, "unauthenticated", "")
	// None of them spent the worker's one signing.
	if r := w.signAs(w.vmID, w.ownCSRs(t)); r.Status != http.StatusOK {
		t.Errorf("the worker's own CSRs after the refusals = %d %s", r.Status, r.Body)
	}
}

// csr is a PEM request for cn in orgs with dns and ips, under a fresh key.
func csr(t *testing.T, cn string, orgs, dns []string, ips ...string) string {
	t.Helper()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER(t, cn, orgs, dns, ips...)}))
}

func csrDER(t *testing.T, cn string, orgs, dns []string, ips ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// ownCSRs are the requests a worker makes for itself: its kubelet's client
// identity and its serving certificate for its name and address.
func (w *worker) ownCSRs(t *testing.T) nodebootstrap.WorkerCSRRequest {
	name := w.node.Name
	return nodebootstrap.WorkerCSRRequest{
		KubeletClient:  csr(t, "system:node:"+name, []string{"system:nodes"}, nil),
		KubeletServing: csr(t, "system:node:"+name, []string{"system:nodes"}, []string{name}, w.node.IPv4),
	}
}

// badlySigned is a PEM request whose signature does not match its body.
func badlySigned(t *testing.T, cn string) string {
	der := csrDER(t, cn, []string{"system:nodes"}, nil)
	der[len(der)-1] ^= 0xff // the last byte of the signature
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// k8sapi signs a worker's requests only for the names and addresses the
// platform gave it, once per bootstrap window: another node's name or an
// address not its own is a 403 csr_not_allowed naming it, a request that
// is not one well-signed PEM request a 400 naming the field, a second
// signing a 409.
func TestWorkerCSRsAreSignedForItsOwnNamesOnce(t *testing.T) {
	w := newWorker(t)
	name, ip := w.node.Name, w.node.IPv4
	own := w.ownCSRs(t)
	with := func(client, serving string) nodebootstrap.WorkerCSRRequest {
		return nodebootstrap.WorkerCSRRequest{KubeletClient: client, KubeletServing: serving}
	}
	for _, c := range []struct {
		body   nodebootstrap.WorkerCSRRequest
		status int
		code   string
		msg    string
	}{
		{with(csr(t, "system:node:cp-1.cluster-1.internal", []string{"system:nodes"}, nil), own.KubeletServing), 403, "csr_not_allowed", `kubelet_client_csr: common name "system:node:cp-1.cluster-1.internal" is not this node's`},
		{with(csr(t, "system:node:"+name, []string{"system:masters"}, nil), own.KubeletServing), 403, "csr_not_allowed", `kubelet_client_csr: organization ["system:masters"] is not ["system:nodes"]`},
		{with(own.KubeletClient, csr(t, name, nil, []string{name}, ip, "10.250.0.9")), 403, "csr_not_allowed", "kubelet_serving_csr: address 10.250.0.9 is not this node's"},
		{with(own.KubeletClient, csr(t, name, nil, []string{"kubernetes.default"}, ip)), 403, "csr_not_allowed", `kubelet_serving_csr: DNS name "kubernetes.default" is not this node's`},
		{with("-----BEGIN CERTIFICATE REQUEST-----\nnot base64\n-----END CERTIFICATE REQUEST-----\n", own.KubeletServing), 400, "invalid_request", "kubelet_client_csr: not one PEM certificate request"},
		{with(own.KubeletClient, ""), 400, "invalid_request", "kubelet_serving_csr: not one PEM certificate request"},
		{with(badlySigned(t, "system:node:"+name), own.KubeletServing), 400, "invalid_request", "kubelet_client_csr: certificate request signature"},
	} {
		refused(t, c.msg, w.signAs(w.vmID, c.body), c.status, c.code, c.msg)
	}
	r := w.signAs(w.vmID, own)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("signing its own requests = %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Fatal("the answer holds a private key")
	}
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	assertWorkerCerts(t, certs, own, name, ip)
	refused(t, "a second signing in the window", w.signAs(w.vmID, w.ownCSRs(t)), http.StatusConflict, "bootstrap_closed", "this worker's certificate requests were signed")
}

// assertWorkerCerts: the client certificate is system:node:<name> in
// system:nodes, the serving one names the node and its address, each is
// over the key of its request, and both chain to the CA answered with them.
func assertWorkerCerts(t *testing.T, certs nodebootstrap.WorkerCertificates, req nodebootstrap.WorkerCSRRequest, name, ip string) {
	t.Helper()
	assertWorkerCertsAt(t, time.Now(), certs, req, name, ip)
}

// assertWorkerCertsAt is assertWorkerCerts on a stack whose clock is now.
func assertWorkerCertsAt(t *testing.T, now time.Time, certs nodebootstrap.WorkerCertificates, req nodebootstrap.WorkerCSRRequest, name, ip string) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(certs.CACert)) {
		t.Fatal("no CA certificate")
	}
	for _, c := range []struct {
		pem, csr string
		usage    x509.ExtKeyUsage
	}{{certs.KubeletClient, req.KubeletClient, x509.ExtKeyUsageClientAuth}, {certs.KubeletServing, req.KubeletServing, x509.ExtKeyUsageServerAuth}} {
		block, _ := pem.Decode([]byte(c.pem))
		if block == nil {
			t.Fatalf("not a certificate: %q", c.pem)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if csr, err := pki.ParseCSR([]byte(c.csr)); err != nil || !cert.PublicKey.(*ecdsa.PublicKey).Equal(csr.PublicKey) {
			t.Errorf("%s is not over its request's key (%v)", cert.Subject, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{c.usage}, CurrentTime: now}); err != nil {
			t.Errorf("%s does not chain to the cluster CA for %v: %v", cert.Subject, c.usage, err)
		}
		if c.usage == x509.ExtKeyUsageClientAuth && (cert.Subject.CommonName != "system:node:"+name || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"})) {
			t.Errorf("client certificate %s, want system:node:%s in system:nodes", cert.Subject, name)
		}
		if c.usage == x509.ExtKeyUsageServerAuth && (!slices.Equal(cert.DNSNames, []string{name}) || len(cert.IPAddresses) == 0 || cert.IPAddresses[0].String() != ip) {
			t.Errorf("serving certificate names %v %v, want %s and %s", cert.DNSNames, cert.IPAddresses, name, ip)
		}
	}
}

// reportAs is POST /bootstrap/worker/{vmID}/status with w's proofs.
func (w *worker) reportAs(vmID int64, body string) stacktest.Response {
	w.s.t.Helper()
	return w.s.VMCall(http.MethodPost, bundle.WorkerStatusPathTemplate, vmID, w.imds, w.access, body)
}

// phase is w's phase as its pool shows it to the operator.
func (w *worker) phase(t *testing.T) string {
	t.Helper()
	var p apitypes.NodePool
	stacktest.Do(t, http.MethodGet, w.s.PoolsURL(w.clusterID, "workers"), "", w.s.Bearer(1)).JSON(t, &p)
	for _, n := range p.Nodes {
		if n.VMID == w.vmID {
			return n.Phase
		}
	}
	t.Fatalf("worker %d is not in its pool: %+v", w.vmID, p)
	return ""
}

// A worker passes a worker's phases: k8sapi records bundle_fetched at its
// fetch and certificates_signed at its signing, the worker reports
// kubelet_started and ready on its own route, and its pool shows each;
// ready closes its bootstrap window. A phase no worker passes is 400, a
// control-plane VM on the worker's route 404.
func TestWorkerPhases(t *testing.T) {
	w := newWorker(t)
	for _, step := range []struct {
		do   func() stacktest.Response
		want int
		then string
	}{
		{func() stacktest.Response { return w.fetchAs(w.vmID) }, http.StatusOK, "bundle_fetched"},
		{func() stacktest.Response { return w.signAs(w.vmID, w.ownCSRs(t)) }, http.StatusOK, "certificates_signed"},
		{func() stacktest.Response { return w.reportAs(w.vmID, `{"phase":"kubelet_started"}`) }, http.StatusNoContent, "kubelet_started"},
		{func() stacktest.Response {
			return w.reportAs(w.vmID, `{"phase":"ready","message":"its Node is Ready"}`)
		}, http.StatusNoContent, "ready"},
	} {
		if r := step.do(); r.Status != step.want {
			t.Fatalf("toward %s: %d %s, want %d", step.then, r.Status, r.Body, step.want)
		}
		if got := w.phase(t); got != step.then {
			t.Fatalf("the pool shows the worker %s, want %s", got, step.then)
		}
	}
	refused(t, "a fetch once ready", w.fetchAs(w.vmID), http.StatusConflict, "bootstrap_closed", "")
	refused(t, "a phase no worker passes", w.reportAs(w.vmID, `{"phase":"etcd_started"}`), http.StatusBadRequest, "invalid_request",
		"phase: etcd_started is no phase a worker passes")
	refused(t, "a phase k8sapi records", w.reportAs(w.vmID, `{"phase":"certificates_signed"}`), http.StatusBadRequest, "invalid_request",
		"phase: certificates_signed is recorded by k8sapi")
	cp := w.controlPlane()
	refused(t, "a control-plane VM's worker report", cp.reportAs(cp.vmID, `{"phase":"ready"}`), http.StatusNotFound, "not_found", "no worker for this VM")
}
