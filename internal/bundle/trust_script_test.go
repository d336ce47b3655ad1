package bundle

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/pki"
)

// During a CA rotation nothing but the trust files may be new: the script
// writes each changed one with its mode, puts the cluster CA's bundle into
// every kubeconfig's certificate-authority-data, and restarts exactly the
// readers of what changed; the same answer again changes nothing.
func TestRenewalWritesTheRotationsTrustFiles(t *testing.T) {
	b, vm, root := renewalNode(t)
	answer := map[string]string{}
	for _, name := range pki.Renewable() {
		answer[string(name)] = mustFile(t, b, CertPath(name))
	}
	bothCAs := mustFile(t, b, CertPath(pki.ClusterCA)) + "NEW CA\n"
	trust := map[string]string{
		CertPath(pki.ClusterCA): bothCAs,
		CertPath(pki.EtcdCA):    mustFile(t, b, CertPath(pki.EtcdCA)), // unchanged: no etcd restart
		ServiceAccountKeyPath:   "NEW SIGNER\n",
	}
	var err error
	if vm.renewal, err = json.Marshal(map[string]any{"certificates": answer, "renewed": []string{}, "trust": trust}); err != nil {
		t.Fatal(err)
	}
	out, err := runRenewal(t, vm, root)
	if err != nil {
		t.Fatalf("renewal: %v\n%s", err, out)
	}
	for path, want := range map[string]struct {
		content string
		mode    uint32
	}{CertPath(pki.ClusterCA): {bothCAs, 0o644}, ServiceAccountKeyPath: {"NEW SIGNER\n", 0o600}} {
		got, mode := readNodeFile(t, root, path)
		if got != want.content || uint32(mode) != want.mode {
			t.Errorf("%s: %q mode %04o, want %q %04o", path, got, mode, want.content, want.mode)
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(bothCAs))
	for _, stem := range []string{"kubelet", "scheduler", "controller-manager"} {
		if kc, _ := readNodeFile(t, root, KubeconfigPath(stem)); !strings.Contains(kc, "certificate-authority-data: "+b64) {
			t.Errorf("%s.kubeconfig does not carry the CA bundle:\n%s", stem, kc)
		}
	}
	got := vm.received()
	want := "restarted: kube-apiserver kube-controller-manager kube-scheduler kubelet " + ControlPlaneTaintUnit
	if len(got) != 1 || !strings.HasSuffix(got[0].Message, want) || strings.Contains(got[0].Message, "etcd ") {
		t.Errorf("reports %+v, want one ending %q\n%s", got, want, out)
	}
	if out, err := runRenewal(t, vm, root); err != nil || !strings.Contains(out, "nothing changed") {
		t.Errorf("second renewal: %v\n%s", err, out)
	}
}

// The trust table's readers are each restarted by a renewal, and a
// control-plane node's trust answer covers every file of the table.
func TestEveryTrustFileIsAnsweredAndItsReadersRestarted(t *testing.T) {
	answered := ControlPlaneTrust(map[pki.Name][]byte{pki.ClusterCA: []byte("a"), pki.EtcdCA: []byte("b"), pki.FrontProxyCA: []byte("c")}, []byte("d"), []byte("e"), []byte("f"))
	for _, f := range controlPlaneTrust {
		if _, ok := answered[f.Path]; !ok {
			t.Errorf("%s is in the trust table but never answered", f.Path)
		}
		for _, r := range f.Readers {
			if !strings.Contains(strings.Join(restartOrder, " "), r) {
				t.Errorf("%s is read by %s, which no renewal restarts", f.Path, r)
			}
		}
	}
}
