package bundle

import (
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/pki"
)

// renewalNode is VM 102 as the shim leaves it (its bundle written under a
// root folder) and the fake VM it talks to.
func renewalNode(t *testing.T) (*Bundle, *fakeVM, string) {
	t.Helper()
	requireTools(t, "bash", "curl", "jq", "openssl", "base64", "sed", "cmp")
	c, nodes := testCluster()
	r := newTestRenderer(t)
	b, err := r.Render(loadFixtures(t).input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(b.Response())
	if err != nil {
		t.Fatal(err)
	}
	vm := newFakeVM(t, body)
	root := filepath.Join(t.TempDir(), "root")
	if out, err := runShim(t, r, vm, root); err != nil {
		t.Fatalf("shim: %v\n%s", err, out)
	}
	return b, vm, root
}

// runRenewal runs the node's exk8s-renew-certificates.sh as its timer
// would, against vm, restarting nothing.
func runRenewal(t *testing.T, vm *fakeVM, root string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, filepath.FromSlash(RenewalScript)))
	cmd.Env = append(append(os.Environ(), vm.env(root)...), "EXK8S_SKIP_HOST_SETUP=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readNodeFile(t *testing.T, root, path string) (string, os.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(path))
	content, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(content), st.Mode().Perm()
}

// A renewal asks with a request per identity, signed with the key the node
// holds; what k8sapi answers differently is written, atomically and with
// the bundle's modes, into the PEM file and the kubeconfig that embeds it,
// the rest stays as it is, and the node reports ready. Run again with
// nothing new, it changes and reports nothing.
func TestRenewalWritesWhatChanged(t *testing.T) {
	b, vm, root := renewalNode(t)
	renewed := map[string]string{"etcd-peer": "NEW etcd-peer\n", "kubelet-client": "NEW kubelet-client\n"}
	answer := map[string]string{}
	for _, name := range pki.Renewable() {
		answer[string(name)] = mustFile(t, b, CertPath(name))
	}
	maps.Copy(answer, renewed)
	var err error
	if vm.renewal, err = json.Marshal(map[string]any{"certificates": answer, "renewed": []string{"etcd-peer", "kubelet-client"}}); err != nil {
		t.Fatal(err)
	}

	out, err := runRenewal(t, vm, root)
	if err != nil {
		t.Fatalf("renewal: %v\n%s", err, out)
	}
	for _, name := range pki.Renewable() {
		checkRenewalRequest(t, b, name, vm.csrs[string(name)])
		got, mode := readNodeFile(t, root, CertPath(name))
		if got != answer[string(name)] || mode != modePublic {
			t.Errorf("%s: %q, mode %04o; want %q, %04o", CertPath(name), got, mode, answer[string(name)], modePublic)
		}
	}
	kubeconfig, mode := readNodeFile(t, root, KubeconfigPath("kubelet"))
	want := strings.Replace(mustFile(t, b, KubeconfigPath("kubelet")), base64.StdEncoding.EncodeToString([]byte(mustFile(t, b, CertPath(pki.KubeletClient)))),
		base64.StdEncoding.EncodeToString([]byte(renewed["kubelet-client"])), 1)
	if kubeconfig != want || mode != modeSecret {
		t.Errorf("kubelet.kubeconfig, mode %04o, is not the bundle's with the renewed client certificate:\n%s", mode, kubeconfig)
	}
	for _, dir := range []string{pkiDir, kubeconfigDir, "/etc/exk8s"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := b.File(dir + "/" + e.Name()); !ok && !e.IsDir() {
				t.Errorf("the renewal left %s/%s behind", dir, e.Name())
			}
		}
	}
	if got := vm.received(); len(got) != 1 || got[0] != (vmReport{"ready", "certificates renewed (etcd-peer kubelet-client); restarted: etcd kubelet"}) {
		t.Errorf("reports %+v\n%s", got, out)
	}

	if out, err := runRenewal(t, vm, root); err != nil || !strings.Contains(out, "no certificate is due; nothing changed") {
		t.Errorf("second renewal: %v\n%s", err, out)
	}
	if got := vm.received(); len(got) != 1 {
		t.Errorf("a renewal that changed nothing reported: %+v", got[1:])
	}
}

// checkRenewalRequest: the request for name is signed with the node's key
// for it and names it.
func checkRenewalRequest(t *testing.T, b *Bundle, name pki.Name, csrPEM string) {
	t.Helper()
	block, _ := pem.Decode([]byte(csrPEM))
	if block == nil {
		t.Errorf("%s: no certificate request", name)
		return
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || csr.CheckSignature() != nil || csr.Subject.CommonName != string(name) {
		t.Errorf("%s: request %v, CN %q", name, err, csr.Subject.CommonName)
		return
	}
	certBlock, _ := pem.Decode([]byte(mustFile(t, b, CertPath(name))))
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if pub, ok := csr.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		t.Errorf("%s: the request is not signed with the node's key", name)
	}
}

// A renewal k8sapi does not answer fails, reports failed with its step
// and the tail of its log, and leaves every certificate as it was.
func TestRenewalReportsItsFailure(t *testing.T) {
	b, vm, root := renewalNode(t)
	out, err := runRenewal(t, vm, root)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("a renewal k8sapi refused succeeded: %v\n%s", err, out)
	}
	got := vm.received()
	if len(got) != 1 || got[0].Phase != "failed" {
		t.Fatalf("reports %+v, want one failed\n%s", got, out)
	}
	checkFailureMessage(t, got[0].Message, `exk8s-renew-certificates: step "asking k8sapi for this node's certificates" failed`,
		"returned error: 404")
	for _, name := range pki.Renewable() {
		if content, _ := readNodeFile(t, root, CertPath(name)); content != mustFile(t, b, CertPath(name)) {
			t.Errorf("%s changed in a failed renewal", CertPath(name))
		}
	}
}

// Every component a renewal may restart has its place in the restart
// order: one left out would never be restarted.
func TestEveryRenewedComponentIsRestarted(t *testing.T) {
	for name, component := range readerOf {
		if !slices.Contains(restartOrder, component) {
			t.Errorf("%s is read by %s, which is not in restartOrder %v", name, component, restartOrder)
		}
	}
}
