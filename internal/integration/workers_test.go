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

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/founding"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// worker is one worker of a fresh pool with its VM's proofs.
type worker struct {
	node            founding.WorkerView
	imds, access    string
	s               *stack
	clusterID, vmID int64
}

func newWorker(t *testing.T) *worker {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	n := s.AddPool(1, id, stacktest.TwoWorkers).Nodes[0]
	imds, access := s.VMCredentials(n.VMID)
	return &worker{node: n, imds: imds, access: access, s: s, clusterID: id, vmID: n.VMID}
}

// call is the worker's call of one of its routes, with its proofs.
func (w *worker) call(method, route, body string) stacktest.Response {
	path := strings.Replace(route, "{vm_id}", itoa(w.vmID), 1)
	return stacktest.Do(w.s.t, method, w.s.api.URL+path, body, map[string]string{
		"X-exc-imds-token": w.imds, "Authorization": "Bearer " + w.access,
	})
}

// A worker's bundle is facts and a CA certificate: no private key, no
// admin identity; it names the worker, its pool's labels and taints and
// where to send its certificate requests.
func TestWorkerBundleHoldsNoPrivateKey(t *testing.T) {
	w := newWorker(t)
	r := w.call(http.MethodGet, bundle.WorkerPathTemplate, "")
	if r.Status != http.StatusOK {
		t.Fatalf("worker bundle = %d %s", r.Status, r.Body)
	}
	for _, secret := range []string{"PRIVATE KEY", "system:masters", "client-key"} {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("the worker bundle holds %q", secret)
		}
	}
	var b nodebootstrap.WorkerBundle
	r.JSON(t, &b)
	if b.NodeName != w.node.Name || b.NodePool != "workers" || b.Labels["tier"] != "web" || len(b.Taints) != 1 ||
		!strings.HasPrefix(b.CACert, "-----BEGIN CERTIFICATE-----") || b.CSRPath != "/bootstrap/worker/"+itoa(w.vmID)+"/csr" {
		t.Errorf("worker bundle %+v", b)
	}
	// A control-plane VM is no worker.
	cp := w.s.Found(1, stacktest.OneNode).ControlPlaneVMIDs[0]
	imds, access := w.s.VMCredentials(cp)
	other := &worker{s: w.s, vmID: cp, imds: imds, access: access}
	if r := other.call(http.MethodGet, bundle.WorkerPathTemplate, ""); r.Status != http.StatusNotFound {
		t.Errorf("a control-plane VM's worker bundle = %d, want 404", r.Status)
	}
}

// csr is a PEM request for cn in orgs with dns and ips, under a fresh key.
func csr(t *testing.T, cn string, orgs, dns []string, ips ...string) string {
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
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func csrBody(t *testing.T, client, serving string) string {
	b, err := json.Marshal(nodebootstrap.WorkerCSRRequest{KubeletClient: client, KubeletServing: serving})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// k8sapi signs a worker's requests only for the names and addresses the
// platform gave it, once per bootstrap window: another node's name or an
// address not its own is a 403 naming it, a second signing a 409.
func TestWorkerCSRsAreSignedForItsOwnNamesOnce(t *testing.T) {
	w := newWorker(t)
	name, ip := w.node.Name, w.node.IPv4
	client := csr(t, "system:node:"+name, []string{"system:nodes"}, nil)
	serving := csr(t, "system:node:"+name, []string{"system:nodes"}, []string{name}, ip)
	for body, want := range map[string]string{
		csrBody(t, csr(t, "system:node:cp-1.cluster-1.internal", []string{"system:nodes"}, nil), serving): `kubelet_client_csr: common name "system:node:cp-1.cluster-1.internal" is not this node's`,
		csrBody(t, csr(t, "system:node:"+name, []string{"system:masters"}, nil), serving):                 `kubelet_client_csr: organization ["system:masters"] is not ["system:nodes"]`,
		csrBody(t, client, csr(t, name, nil, []string{name}, ip, "10.250.0.9")):                           "kubelet_serving_csr: address 10.250.0.9 is not this node's",
		csrBody(t, client, csr(t, name, nil, []string{"kubernetes.default"}, ip)):                         `kubelet_serving_csr: DNS name "kubernetes.default" is not this node's`,
	} {
		r := w.call(http.MethodPost, bundle.WorkerCSRPathTemplate, body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if r.JSON(t, &e); r.Status != http.StatusForbidden || e.Error.Code != "csr_not_allowed" || !strings.HasPrefix(e.Error.Message, want) {
			t.Errorf("= %d %s, want 403 csr_not_allowed %q", r.Status, r.Body, want)
		}
	}
	r := w.call(http.MethodPost, bundle.WorkerCSRPathTemplate, csrBody(t, client, serving))
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Fatalf("signing its own requests = %d %s, want 200 and no key", r.Status, r.Body)
	}
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	assertWorkerCerts(t, certs, name, ip)
	again := w.call(http.MethodPost, bundle.WorkerCSRPathTemplate, csrBody(t, client, serving))
	if again.Status != http.StatusConflict || again.ErrorCode(t) != "csr_already_signed" {
		t.Errorf("a second signing in the window = %d %s, want 409 csr_already_signed", again.Status, again.Body)
	}
}

// assertWorkerCerts: the client certificate is system:node:<name> in
// system:nodes, the serving one names the node and its address, and both
// chain to the CA answered with them.
func assertWorkerCerts(t *testing.T, certs nodebootstrap.WorkerCertificates, name, ip string) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(certs.CACert)) {
		t.Fatal("no CA certificate")
	}
	for _, c := range []struct {
		pem   string
		usage x509.ExtKeyUsage
	}{{certs.KubeletClient, x509.ExtKeyUsageClientAuth}, {certs.KubeletServing, x509.ExtKeyUsageServerAuth}} {
		block, _ := pem.Decode([]byte(c.pem))
		if block == nil {
			t.Fatalf("not a certificate: %q", c.pem)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
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
