package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// workerIdentities are a worker's identities, which its renewal renews.
var workerIdentities = []pki.Name{pki.KubeletClient, pki.KubeletServing}

// joinedWorker is a worker host whose bootstrap signed and installed its
// two certificates.
func joinedWorker(t *testing.T) *workerHost {
	t.Helper()
	h := newWorkerHost(t)
	h.vm.signWorker = h.signAs(h.subject(t))
	if out, err := h.run(t); err != nil {
		t.Fatalf("worker script: %v\n%s", err, out)
	}
	return h
}

// renewAs answers a renewal as k8sapi does: each request must prove its
// certificate's key (pki.ProvePossession), and is re-issued over it from
// trust with the recorded names.
func (h *workerHost) renewAs(trust *pki.Trust, subject pki.Subject) func(workerRenewal) ([]byte, error) {
	return func(r workerRenewal) ([]byte, error) {
		out := map[string]any{"renewed": workerIdentities, "not_after": time.Now().Add(time.Hour)}
		certs := map[string]string{}
		for _, name := range workerIdentities {
			pub, err := pki.ProvePossession([]byte(r.CSRs[string(name)]), []byte(r.Certificates[string(name)]))
			if err != nil {
				return nil, err
			}
			cert, err := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}.Reissue(trust, name, subject, pub)
			if err != nil {
				return nil, err
			}
			certs[string(name)] = string(cert)
		}
		out["certificates"] = certs
		return json.Marshal(out)
	}
}

// installed is the worker's certificates and keys by identity.
func (h *workerHost) installed(t *testing.T) (certs, keys map[pki.Name]string) {
	certs, keys = map[pki.Name]string{}, map[pki.Name]string{}
	for _, name := range workerIdentities {
		certs[name], _ = readNodeFile(t, h.root, CertPath(name))
		keys[name], _ = readNodeFile(t, h.root, KeyPath(name))
	}
	return certs, keys
}

// A ready worker's renewal sends each certificate it holds with a request
// signed by that certificate's key, installs the answers over the same
// keys (they chain to the cluster CA), and reports ready; answered the
// certificates it holds, it changes nothing and reports nothing.
func TestWorkerRenewalProvesItsKeys(t *testing.T) {
	h := joinedWorker(t)
	before, keys := h.installed(t)
	h.vm.renewWorker = h.renewAs(h.trust, h.subject(t))
	if out, err := runRenewal(t, h.vm, h.root); err != nil {
		t.Fatalf("renewal: %v\n%s", err, out)
	}
	if len(h.vm.workerRenewals) != 1 {
		t.Fatalf("%d renewals, want 1", len(h.vm.workerRenewals))
	}
	sent := h.vm.workerRenewals[0]
	after, keysAfter := h.installed(t)
	for _, name := range workerIdentities {
		if sent.Certificates[string(name)] != before[name] {
			t.Errorf("the renewal showed a %s certificate that is not the one installed", name)
		}
		if after[name] == before[name] || keysAfter[name] != keys[name] {
			t.Errorf("%s: renewed %v, key kept %v; want a new certificate over the same key", name, after[name] != before[name], keysAfter[name] == keys[name])
		}
		checkSignedFor(t, h.trust, after[name], keys[name])
	}
	if got := h.vm.receivedFromWorker(); len(got) != 1 || got[0].Phase != string(clusterfacts.Ready) {
		t.Errorf("worker reports %+v, want one ready", got)
	}
	if _, err := os.Stat(filepath.Join(h.root, "etc/exk8s/renewal-restarts-pending")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the kubelet's restart is still pending (%v)", err)
	}

	// Nothing due: k8sapi answers what the worker holds.
	h.vm.renewWorker = func(workerRenewal) ([]byte, error) {
		certs := map[string]string{}
		for name, c := range after {
			certs[string(name)] = c
		}
		return json.Marshal(map[string]any{"certificates": certs, "renewed": []string{}})
	}
	if out, err := runRenewal(t, h.vm, h.root); err != nil {
		t.Fatalf("renewal, nothing due: %v\n%s", err, out)
	}
	if again, _ := h.installed(t); !equalCerts(again, after) || len(h.vm.receivedFromWorker()) != 1 {
		t.Errorf("with nothing due, the renewal changed certificates or reported again")
	}
}

func equalCerts(a, b map[pki.Name]string) bool {
	for name := range a {
		if a[name] != b[name] {
			return false
		}
	}
	return len(a) == len(b)
}

// An answer that is not the cluster CA's certificate for the worker's key
// is refused before anything is written: the worker keeps the certificates
// it has and reports the failure with its step.
func TestWorkerRenewalRefusesCertificatesNotForItsKeys(t *testing.T) {
	for what, renew := range map[string]func(h *workerHost, t *testing.T) func(workerRenewal) ([]byte, error){
		"another CA's": func(h *workerHost, t *testing.T) func(workerRenewal) ([]byte, error) {
			return h.renewAs(mustTrust(t), h.subject(t))
		},
		"another key's": func(h *workerHost, t *testing.T) func(workerRenewal) ([]byte, error) {
			sign := h.signAs(h.subject(t))
			return func(workerRenewal) ([]byte, error) {
				answer, err := sign(map[string]string{"kubelet_client_csr": foreignCSR(t), "kubelet_serving_csr": foreignCSR(t)})
				var certs map[string]string
				if err == nil {
					err = json.Unmarshal(answer, &certs)
				}
				if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]any{"renewed": workerIdentities, "certificates": map[string]string{
					string(pki.KubeletClient): certs["kubelet_client_cert"], string(pki.KubeletServing): certs["kubelet_serving_cert"]}})
			}
		},
	} {
		t.Run(what, func(t *testing.T) {
			h := joinedWorker(t)
			before, _ := h.installed(t)
			h.vm.renewWorker = renew(h, t)
			if out, err := runRenewal(t, h.vm, h.root); err == nil {
				t.Fatalf("the worker installed %s certificate:\n%s", what, out)
			}
			if after, _ := h.installed(t); !equalCerts(after, before) {
				t.Errorf("the worker replaced its certificates with %s", what)
			}
			got := h.vm.receivedFromWorker()
			if len(got) != 1 || got[0].Phase != string(clusterfacts.Failed) {
				t.Fatalf("worker reports %+v, want one failed", got)
			}
			checkFailureMessage(t, got[0].Message, `exk8s-renew-certificates: step "checking the answered certificates"`,
				"is not the cluster CA's for this worker's key")
		})
	}
}
