package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
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

// proved is the worker's VM as the bundle function's four proofs judge
// its credentials (the worker's routes are not served yet: the use case
// is called with what they would pass it).
func (w *worker) proved() auth.BootstrapVM {
	w.s.t.Helper()
	vm, _, err := w.s.servers["GetBundleFunction"].Auth.ProveVM(context.Background(), w.vmID, w.imds, "Bearer "+w.access, nil)
	if err != nil {
		w.s.t.Fatalf("proofs of vm %d: %v", w.vmID, err)
	}
	return vm
}

// refusal is err's code and message, failing the test unless it is one.
func refusal(t *testing.T, err error) (string, string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("not a refusal: %v", err)
	}
	return e.Code.String(), e.Message
}

// A worker's bundle is facts and a CA certificate: no private key, no
// admin identity; it names the worker, its pool's labels and taints and
// where to send its certificate requests.
func TestWorkerBundleHoldsNoPrivateKey(t *testing.T) {
	w := newWorker(t)
	b, err := w.s.workers.WorkerBundle(context.Background(), w.proved())
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(b)
	for _, secret := range []string{"PRIVATE KEY", "system:masters", "client-key"} {
		if strings.Contains(string(doc), secret) {
			t.Errorf("the worker bundle holds %q", secret)
		}
	}
	if b.NodeName != w.node.Name || b.NodePool != "workers" || b.Labels["tier"] != "web" || len(b.Taints) != 1 ||
		!strings.HasPrefix(b.CACert, "-----BEGIN CERTIFICATE-----") || b.CSRPath != "/bootstrap/worker/"+itoa(w.vmID)+"/csr" {
		t.Errorf("worker bundle %+v", b)
	}
	// A control-plane VM is no worker.
	cp := w.s.Found(1, stacktest.OneNode).ControlPlaneVMIDs[0]
	imds, access := w.s.VMCredentials(cp)
	other := &worker{s: w.s, vmID: cp, imds: imds, access: access}
	if _, err := w.s.workers.WorkerBundle(context.Background(), other.proved()); err == nil {
		t.Error("a control-plane VM was served a worker bundle")
	} else if code, _ := refusal(t, err); code != "not_found" {
		t.Errorf("a control-plane VM's worker bundle: %s, want not_found", code)
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

func csrBody(_ *testing.T, client, serving string) nodebootstrap.WorkerCSRRequest {
	return nodebootstrap.WorkerCSRRequest{KubeletClient: client, KubeletServing: serving}
}

// k8sapi signs a worker's requests only for the names and addresses the
// platform gave it, once per bootstrap window: another node's name or an
// address not its own is a 403 naming it, a second signing a 409.
func TestWorkerCSRsAreSignedForItsOwnNamesOnce(t *testing.T) {
	w := newWorker(t)
	name, ip := w.node.Name, w.node.IPv4
	client := csr(t, "system:node:"+name, []string{"system:nodes"}, nil)
	serving := csr(t, "system:node:"+name, []string{"system:nodes"}, []string{name}, ip)
	for body, want := range map[nodebootstrap.WorkerCSRRequest]string{
		csrBody(t, csr(t, "system:node:cp-1.cluster-1.internal", []string{"system:nodes"}, nil), serving): `kubelet_client_csr: common name "system:node:cp-1.cluster-1.internal" is not this node's`,
		csrBody(t, csr(t, "system:node:"+name, []string{"system:masters"}, nil), serving):                 `kubelet_client_csr: organization ["system:masters"] is not ["system:nodes"]`,
		csrBody(t, client, csr(t, name, nil, []string{name}, ip, "10.250.0.9")):                           "kubelet_serving_csr: address 10.250.0.9 is not this node's",
		csrBody(t, client, csr(t, name, nil, []string{"kubernetes.default"}, ip)):                         `kubelet_serving_csr: DNS name "kubernetes.default" is not this node's`,
	} {
		_, err := w.s.workers.SignWorker(context.Background(), w.proved(), body)
		if code, msg := refusal(t, err); code != "forbidden" || !strings.HasPrefix(msg, want) {
			t.Errorf("= %s %q, want 403 forbidden %q", code, msg, want)
		}
	}
	certs, err := w.s.workers.SignWorker(context.Background(), w.proved(), csrBody(t, client, serving))
	if err != nil {
		t.Fatalf("signing its own requests: %v", err)
	}
	if doc, _ := json.Marshal(certs); strings.Contains(string(doc), "PRIVATE KEY") {
		t.Fatal("the answer holds a private key")
	}
	assertWorkerCerts(t, *certs, name, ip)
	_, err = w.s.workers.SignWorker(context.Background(), w.proved(), csrBody(t, client, serving))
	if err == nil {
		t.Fatal("a second signing in the window was answered")
	}
	if code, _ := refusal(t, err); code != "bootstrap_closed" {
		t.Errorf("a second signing in the window: %s, want 409 bootstrap_closed", code)
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
