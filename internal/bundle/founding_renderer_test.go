package bundle

import (
	"testing"

	"github.com/excloud/k8sapi/internal/pki"
)

// The founding functions carry only templates.Founding: what they render
// from it must be byte for byte what the full template set renders, and
// it must hold no bundle (a node template there would be dead weight).
func TestFoundingRendererRendersWhatFoundingHandsOut(t *testing.T) {
	full, slim := newTestRenderer(t), mustFoundingRenderer(t)
	in := UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in"}
	a, errA := full.Userdata(in)
	b, errB := slim.Userdata(in)
	if errA != nil || errB != nil || a != b {
		t.Errorf("userdata differs between the renderers (errors %v, %v)", errA, errB)
	}
	kc := KubeconfigInput{ClusterName: "c", Server: "https://c.example:6443",
		CAPEM: []byte("ca"), Identity: pki.KeyPair{CertPEM: []byte("cert"), KeyPEM: []byte("key")}}
	a, errA = full.Kubeconfig(kc)
	b, errB = slim.Kubeconfig(kc)
	if errA != nil || errB != nil || a != b {
		t.Errorf("kubeconfig differs between the renderers (errors %v, %v)", errA, errB)
	}
	if slim.tmpl.Lookup("kube-apiserver.yaml") != nil {
		t.Error("the founding renderer holds a node template")
	}
}

func mustFoundingRenderer(t *testing.T) *Renderer {
	t.Helper()
	r, err := NewFoundingRenderer()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
