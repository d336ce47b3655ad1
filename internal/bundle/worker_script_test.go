package bundle

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// workerHost is a worker VM whose shim wrote its bundle under root, the
// fake k8sapi it talks to, and the cluster trust that fake signs with.
type workerHost struct {
	vm    *fakeVM
	root  string
	trust *pki.Trust
	in    WorkerInput
}

// newWorkerHost renders testWorker's bundle over a fresh cluster CA, serves
// it, and runs the worker's shim (host setup skipped) against it.
func newWorkerHost(t *testing.T) *workerHost {
	t.Helper()
	requireTools(t, "bash", "curl", "jq", "openssl")
	is := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	in := workerInput(t, testClusterOnly())
	in.CACert = trust.CAs[pki.ClusterCA].CertPEM
	r := newTestRenderer(t)
	files, err := r.RenderWorker(in)
	if err != nil {
		t.Fatal(err)
	}
	contents, modes := FileMaps(files)
	body, err := json.Marshal(map[string]any{"files": contents, "file_modes": modes})
	if err != nil {
		t.Fatal(err)
	}
	h := &workerHost{vm: newFakeVM(t, body), root: filepath.Join(t.TempDir(), "root"), trust: trust, in: in}
	if out, err := runShimOf(t, r, h.vm, h.root, UserdataInput{BootstrapBaseURL: "http://k8sapi.invalid", Worker: true}); err != nil {
		t.Fatalf("worker shim: %v\n%s", err, out)
	}
	h.vm.mu.Lock()
	defer h.vm.mu.Unlock()
	if h.vm.workerFetches != 1 || h.vm.fetches != 0 {
		t.Fatalf("the worker's shim fetched %d worker bundles and %d control-plane ones, want 1 and 0", h.vm.workerFetches, h.vm.fetches)
	}
	return h
}

// signAs answers each request as k8sapi does: the cert table's row over
// the request's key, with the recorded names (never the request's).
func (h *workerHost) signAs(subject pki.Subject) func(map[string]string) ([]byte, error) {
	return func(csrs map[string]string) ([]byte, error) {
		out := map[string]string{"ca_cert": string(h.trust.CAs[pki.ClusterCA].CertPEM)}
		for field, name := range map[string]pki.Name{"kubelet_client": pki.KubeletClient, "kubelet_serving": pki.KubeletServing} {
			csr, err := pki.ParseCSR([]byte(csrs[field+"_csr"]))
			if err != nil {
				return nil, err
			}
			cert, err := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}.Reissue(h.trust, name, subject, csr.PublicKey)
			if err != nil {
				return nil, err
			}
			out[field+"_cert"] = string(cert)
		}
		return json.Marshal(out)
	}
}

// run runs the worker's bootstrap script with host setup skipped.
func (h *workerHost) run(t *testing.T) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(h.root, "usr/local/bin/exk8s-bootstrap-worker.sh"))
	cmd.Env = append(append(os.Environ(), h.vm.env(h.root)...), "EXK8S_SKIP_HOST_SETUP=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *workerHost) subject(t *testing.T) pki.Subject {
	s, err := h.in.Cluster.CertSubject(h.in.Worker)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The worker makes its two keys, owner-only, and sends a request for each
// (system:node:<name> in system:nodes; the serving one with its own name
// and addresses); it installs the answers, which chain to the cluster CA
// and are for its keys, and writes the kubelet's kubeconfig over its own
// key. Run again, it keeps its keys and asks nothing.
func TestWorkerScriptSignsItsOwnKeys(t *testing.T) {
	h := newWorkerHost(t)
	h.vm.signWorker = h.signAs(h.subject(t))
	if out, err := h.run(t); err != nil {
		t.Fatalf("worker script: %v\n%s", err, out)
	}
	if len(h.vm.workerCSRs) != 1 {
		t.Fatalf("%d signing requests, want 1", len(h.vm.workerCSRs))
	}
	sent := h.vm.workerCSRs[0]
	name := h.in.Worker.Name
	checkWorkerCSR(t, sent["kubelet_client_csr"], "system:node:"+name, nil, nil)
	checkWorkerCSR(t, sent["kubelet_serving_csr"], "system:node:"+name, []string{name}, []string{"10.0.0.14", "fd00::14"})
	keys := map[pki.Name]string{}
	for _, id := range []pki.Name{pki.KubeletClient, pki.KubeletServing} {
		key, mode := readNodeFile(t, h.root, KeyPath(id))
		if mode != modeSecret || !strings.Contains(key, "PRIVATE KEY") {
			t.Errorf("%s: mode %04o, want a key of mode %04o", KeyPath(id), mode, modeSecret)
		}
		keys[id] = key
		cert, _ := readNodeFile(t, h.root, CertPath(id))
		checkSignedFor(t, h.trust, cert, key)
	}
	kubeconfig, mode := readNodeFile(t, h.root, KubeconfigPath("kubelet"))
	for _, line := range []string{"server: https://exk8s-7-2a.k8s.excloud.co.in:6443", "certificate-authority: /etc/exk8s/pki/ca.pem",
		"client-certificate: /etc/exk8s/pki/kubelet-client.pem", "client-key: /etc/exk8s/pki/kubelet-client-key.pem",
		"current-context: system:node:" + name + "@exk8s-7-2a"} {
		if !strings.Contains(kubeconfig, line+"\n") {
			t.Errorf("kubelet.kubeconfig lacks %q:\n%s", line, kubeconfig)
		}
	}
	if mode != modeSecret {
		t.Errorf("kubelet.kubeconfig mode %04o", mode)
	}

	if out, err := h.run(t); err != nil {
		t.Fatalf("worker script, again: %v\n%s", err, out)
	}
	if len(h.vm.workerCSRs) != 1 {
		t.Errorf("run again, the worker asked to be signed again")
	}
	for id, key := range keys {
		if again, _ := readNodeFile(t, h.root, KeyPath(id)); again != key {
			t.Errorf("run again, the worker replaced its %s key", id)
		}
	}
}

// An answer that is not for the worker's key (or not the cluster CA's) is
// refused: nothing is installed and the failure is reported with its step.
func TestWorkerScriptRefusesCertificatesNotForItsKeys(t *testing.T) {
	for what, trust := range map[string]func(h *workerHost) *pki.Trust{
		"another key's": func(h *workerHost) *pki.Trust { return h.trust },
		"another CA's":  func(*workerHost) *pki.Trust { return mustTrust(t) },
	} {
		t.Run(what, func(t *testing.T) {
			h := newWorkerHost(t)
			signer := &workerHost{trust: trust(h)}
			sign := signer.signAs(h.subject(t))
			h.vm.signWorker = func(csrs map[string]string) ([]byte, error) {
				if what == "another key's" { // requests of a key the worker does not hold
					csrs = map[string]string{"kubelet_client_csr": foreignCSR(t), "kubelet_serving_csr": foreignCSR(t)}
				}
				return sign(csrs)
			}
			out, err := h.run(t)
			if err == nil {
				t.Fatalf("the worker installed %s certificate:\n%s", what, out)
			}
			if _, err := os.Stat(filepath.Join(h.root, CertPath(pki.KubeletClient))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the worker installed %s certificate (%v)", what, err)
			}
			got := h.vm.receivedFromWorker()
			if len(got) != 1 || got[0].Phase != string(clusterfacts.Failed) || len(h.vm.received()) != 0 {
				t.Fatalf("worker reports %+v (control-plane reports %+v), want one failed on the worker's route", got, h.vm.received())
			}
			checkFailureMessage(t, got[0].Message, `exk8s-bootstrap-worker: step "asking k8sapi to sign the kubelet's certificate requests"`,
				"is not the cluster CA's certificate for this node's key")
		})
	}
}

func mustTrust(t *testing.T) *pki.Trust {
	trust, err := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// foreignCSR is a request under a key no worker holds.
func foreignCSR(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:web-4"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// checkWorkerCSR: pemCSR is one request, signed with its key, for cn in
// system:nodes with exactly dns and ips.
func checkWorkerCSR(t *testing.T, pemCSR, cn string, dns, ips []string) {
	t.Helper()
	csr, err := pki.ParseCSR([]byte(pemCSR))
	if err != nil {
		t.Fatalf("request %q: %v", pemCSR, err)
	}
	var gotIPs []string
	for _, ip := range csr.IPAddresses {
		gotIPs = append(gotIPs, ip.String())
	}
	if csr.Subject.CommonName != cn || !slices.Equal(csr.Subject.Organization, []string{"system:nodes"}) ||
		!slices.Equal(csr.DNSNames, dns) || !slices.Equal(gotIPs, ips) {
		t.Errorf("request for %q %v %v %v, want %q system:nodes %v %v", csr.Subject.CommonName, csr.Subject.Organization, csr.DNSNames, gotIPs, cn, dns, ips)
	}
}

// checkSignedFor: certPEM chains to trust's cluster CA and is for keyPEM.
func checkSignedFor(t *testing.T, trust *pki.Trust, certPEM, keyPEM string) {
	t.Helper()
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		t.Fatalf("no certificate: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(trust.CAs[pki.ClusterCA].CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s does not chain to the cluster CA: %v", cert.Subject, err)
	}
	key, err := pki.ParseKey([]byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey) {
		t.Errorf("%s is not for the worker's key", cert.Subject)
	}
}
