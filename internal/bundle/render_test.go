package bundle

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// TestRenderRejectsBadInput: every problem is reported with its field path.
func TestRenderRejectsBadInput(t *testing.T) {
	c, nodes := testCluster()
	fx := loadFixtures(t)
	in := fx.input(c, nodes, 101)
	in.Cluster.Name = "Bad Name"
	in.Cluster.ServiceCIDR = "10.0.0.0/30"
	in.Nodes = append(in.Nodes, clusterfacts.Node{VMID: 104, Ordinal: 1, Name: "cp-4.cluster-42.internal", IPv4: "fd00::4"})
	in.Artifacts.KubeDownloadBase = "ftp://mirror"
	in.Artifacts.SHA256 = map[string]string{"kubelet": "XYZ"}
	delete(in.CACerts, pki.FrontProxyCA)
	delete(in.Identities, pki.KubeletClient)
	_, err := newTestRenderer(t).Render(in)
	if err == nil {
		t.Fatal("bad input rendered")
	}
	want := []string{
		`cluster.name: must be a lowercase DNS label, got "Bad Name"`,
		"cluster.service_cidr: 10.0.0.0/30 is too small: it needs at least 16 addresses",
		"nodes[3].ordinal: must be positive and unique, got 1",
		`nodes[3].ipv4: must be an IPv4 address, got "fd00::4"`,
		`artifacts.kube_download_base: must be an http(s) URL, got "ftp://mirror"`,
		"artifacts.sha256[kubelet]: must map a file name to a lowercase hex SHA-256",
		"ca_certs.front-proxy-ca: missing",
		"identities.kubelet-client: missing certificate or key",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}

	in = fx.input(c, nodes, 999)
	if _, err := newTestRenderer(t).Render(in); err == nil || !strings.Contains(err.Error(), "self_vm_id: VM 999 is not one of the nodes") {
		t.Errorf("unknown self VM: %v", err)
	}
}

func TestUserdataRejectsBadURL(t *testing.T) {
	r := newTestRenderer(t)
	for _, u := range []string{"", "k8sapi.excloud.in", "https://x/'; rm -rf /", "file:///etc"} {
		if _, err := r.Userdata(UserdataInput{BootstrapBaseURL: u}); err == nil {
			t.Errorf("Userdata(%q) accepted", u)
		}
	}
}

// The shell library calls k8sapi's VM routes by the paths of VMRoutes, the
// VM's id in place of {vm_id} (the shim and the scripts against the fake
// VM, which serves the same table, show it works).
func TestShellLibraryCallsTheVMRoutes(t *testing.T) {
	out, err := newTestRenderer(t).Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range VMRoutes() {
		if want := "    " + r.Name + ") path=" + shellQuote(r.Path) + " ;;\n"; !strings.Contains(out, want) {
			t.Errorf("the shell library does not know the route %s as %q", r.Name, want)
		}
	}
	if !strings.Contains(out, `printf '%s' "${path/"{vm_id}"/$2}"`) {
		t.Error("the shell library does not put the VM's id in place of {vm_id}")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	fx := loadFixtures(t)
	c, nodes := testCluster()
	r := newTestRenderer(t)
	a, err := r.Render(fx.input(c, nodes, 103))
	if err != nil {
		t.Fatal(err)
	}
	// Reversed peer order and a fresh renderer give the same bytes.
	rev := []clusterfacts.Node{nodes[2], nodes[1], nodes[0]}
	b, err := newTestRenderer(t).Render(fx.input(c, rev, 103))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Files) != len(b.Files) {
		t.Fatal("file count differs")
	}
	for i := range a.Files {
		if a.Files[i] != b.Files[i] {
			t.Errorf("%s differs between renders", a.Files[i].Path)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	c, nodes := testCluster()
	cp := issueClusterPKI(b, c, nodes, time.Now)
	in := cp.input(c, nodes, 101)
	r := newTestRenderer(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNoKubernetesDepsInBinary: the renderer ships in Lambda binaries, so
// Kubernetes and YAML libraries stay in _test.go files.
func TestNoKubernetesDepsInBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go tool is not on PATH: the dependency check cannot run")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/excloud/k8sapi/internal/bundle").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/") {
			t.Errorf("internal/bundle depends on %s outside tests", dep)
		}
	}
}
