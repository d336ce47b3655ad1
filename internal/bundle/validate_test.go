package bundle

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template/parse"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// realBundles renders every node of the test cluster from a PKI the pki
// package issues now, so certificates can be verified for real.
func realBundles(t *testing.T) (*clusterPKI, map[int64]*Bundle) {
	t.Helper()
	c, nodes := testCluster()
	return realBundlesOf(t, c, nodes)
}

// realBundlesOf is realBundles for another cluster (another CNI).
func realBundlesOf(t *testing.T, c clusterfacts.Cluster, nodes []clusterfacts.Node) (*clusterPKI, map[int64]*Bundle) {
	t.Helper()
	cp := issueClusterPKI(t, c, nodes, time.Now)
	r := newTestRenderer(t)
	out := map[int64]*Bundle{}
	for _, n := range nodes {
		b, err := r.Render(cp.input(c, nodes, n.VMID))
		if err != nil {
			t.Fatal(err)
		}
		out[n.VMID] = b
	}
	return cp, out
}

func mustFile(t *testing.T, b *Bundle, path string) string {
	t.Helper()
	f, ok := b.File(path)
	if !ok {
		t.Fatalf("bundle of %s has no %s", b.Metadata.NodeName, path)
	}
	return f.Content
}

func strictYAML(t *testing.T, name, doc string, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Errorf("%s does not strictly decode into %T: %v", name, into, err)
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			p := "/etc/kubernetes/manifests/" + c + ".yaml"
			var pod corev1.Pod
			strictYAML(t, p, mustFile(t, b, p), &pod)
			if pod.Kind != "Pod" || pod.Name != c || pod.Namespace != "kube-system" || !pod.Spec.HostNetwork || len(pod.Spec.Containers) != 1 {
				t.Errorf("%s: unexpected pod %s/%s kind %q", p, pod.Namespace, pod.Name, pod.Kind)
			}
			if img := pod.Spec.Containers[0].Image; img != "registry.k8s.io/"+c+":v1.35.4" {
				t.Errorf("%s: image %q", p, img)
			}
		}

		kinds := map[string]int{}
		for i, doc := range strings.Split(mustFile(t, b, "/etc/exk8s/manifests/coredns.yaml"), "\n---\n") {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("coredns.yaml doc %d: %v", i, err)
			}
			kinds[meta.Kind]++
			name := fmt.Sprintf("coredns.yaml doc %d (%s)", i, meta.Kind)
			switch meta.Kind {
			case "ServiceAccount":
				strictYAML(t, name, doc, &corev1.ServiceAccount{})
			case "ClusterRole":
				strictYAML(t, name, doc, &rbacv1.ClusterRole{})
			case "ClusterRoleBinding":
				strictYAML(t, name, doc, &rbacv1.ClusterRoleBinding{})
			case "ConfigMap":
				var cm corev1.ConfigMap
				strictYAML(t, name, doc, &cm)
				if !strings.Contains(cm.Data["Corefile"], "kubernetes cluster.local in-addr.arpa") {
					t.Errorf("Corefile does not serve the cluster domain:\n%s", cm.Data["Corefile"])
				}
			case "Service":
				var svc corev1.Service
				strictYAML(t, name, doc, &svc)
				if svc.Spec.ClusterIP != "10.96.0.10" {
					t.Errorf("kube-dns clusterIP %q, want 10.96.0.10", svc.Spec.ClusterIP)
				}
			case "Deployment":
				var d appsv1.Deployment
				strictYAML(t, name, doc, &d)
				if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.k8s.io/coredns/coredns:v1.13.1" {
					t.Errorf("coredns image %q", img)
				}
			default:
				t.Errorf("%s: unexpected kind", name)
			}
		}
		for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service", "Deployment"} {
			if kinds[k] != 1 {
				t.Errorf("coredns.yaml has %d %s documents, want 1", kinds[k], k)
			}
		}

		var kc kubeletv1beta1.KubeletConfiguration
		strictYAML(t, "kubelet config", mustFile(t, b, "/var/lib/kubelet/config.yaml"), &kc)
		n := selfNode(t, b)
		if kc.Address != n.IPv4 || kc.CgroupDriver != "systemd" || kc.TLSCertFile != "/etc/exk8s/pki/kubelet.pem" ||
			kc.TLSPrivateKeyFile != "/etc/exk8s/pki/kubelet-key.pem" || kc.Authentication.X509.ClientCAFile != "/etc/exk8s/pki/ca.pem" ||
			kc.Authentication.Webhook.Enabled == nil || !*kc.Authentication.Webhook.Enabled || kc.Authorization.Mode != "Webhook" ||
			!slices.Equal(kc.ClusterDNS, []string{"10.96.0.10"}) {
			t.Errorf("kubelet config of %s is not as intended: %+v", n.Name, kc)
		}

		var values map[string]any
		if err := yaml.UnmarshalStrict([]byte(mustFile(t, b, "/etc/exk8s/config/cilium-values.yaml")), &values); err != nil {
			t.Errorf("cilium values: %v", err)
		}
		if values["k8sServiceHost"] != n.IPv4 {
			t.Errorf("cilium k8sServiceHost %v, want %s", values["k8sServiceHost"], n.IPv4)
		}
	}
}

func selfNode(t *testing.T, b *Bundle) clusterfacts.Node {
	t.Helper()
	_, nodes := testCluster()
	for _, n := range nodes {
		if n.VMID == b.Metadata.VMID {
			return n
		}
	}
	t.Fatalf("no node %d", b.Metadata.VMID)
	return clusterfacts.Node{}
}

// wantKubeconfigs: file stem → identity, CN, O, server. Only the initial
// node holds the admin (system:masters) kubeconfig, for the addons.
func wantKubeconfigs(n clusterfacts.Node, initial bool) map[string]struct {
	cn, server string
	orgs       []string
} {
	self := "https://" + n.IPv4 + ":6443"
	want := map[string]struct {
		cn, server string
		orgs       []string
	}{
		"kubelet":            {"system:node:" + n.Name, self, []string{"system:nodes"}},
		"controller-manager": {"system:kube-controller-manager", "https://127.0.0.1:6443", nil},
		"scheduler":          {"system:kube-scheduler", "https://127.0.0.1:6443", nil},
	}
	if initial {
		want["admin"] = struct {
			cn, server string
			orgs       []string
		}{"cluster-admin", self, []string{"system:masters"}}
	}
	return want
}

// Least authority: system:masters is on the initial node only (its admin
// kubeconfig and the admin pair); no other file of any bundle names it in a
// certificate, and the API server's kubelet client is in no group.
func TestOnlyTheInitialNodeHoldsSystemMasters(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		initial := b.Metadata.IsInitialControlPlane
		var masters []string
		for _, f := range b.Files {
			p := f.Path
			for _, cert := range certsIn(t, p, f.Content) {
				if slices.Contains(cert.Subject.Organization, "system:masters") {
					masters = append(masters, p)
				}
				if cert.Subject.CommonName == "kube-apiserver-kubelet-client" && len(cert.Subject.Organization) > 0 {
					t.Errorf("%s: the kubelet client is in %v", p, cert.Subject.Organization)
				}
			}
		}
		slices.Sort(masters)
		want := []string{}
		if initial {
			want = []string{KubeconfigPath("admin"), CertPath(pki.Admin)}
		}
		if !slices.Equal(masters, want) && !(len(masters) == 0 && len(want) == 0) {
			t.Errorf("%s (initial %v): system:masters in %v, want %v", b.Metadata.NodeName, initial, masters, want)
		}
	}
}

// certsIn returns the certificates a bundle file holds: PEM blocks, and a
// kubeconfig's client certificate.
func certsIn(t *testing.T, path, content string) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	rest := []byte(content)
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, cert)
		}
	}
	if strings.HasSuffix(path, ".kubeconfig") {
		cfg, err := clientcmd.Load([]byte(content))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, user := range cfg.AuthInfos {
			if cert, err := pki.ParseCert(user.ClientCertificateData); err == nil {
				out = append(out, cert)
			}
		}
	}
	return out
}

func TestKubeconfigsLoadAndChain(t *testing.T) {
	cp, bundles := realBundles(t)
	for _, b := range bundles {
		n := selfNode(t, b)
		for stem, want := range wantKubeconfigs(n, b.Metadata.IsInitialControlPlane) {
			p := KubeconfigPath(stem)
			cfg, err := clientcmd.Load([]byte(mustFile(t, b, p)))
			if err != nil {
				t.Fatalf("%s: clientcmd.Load: %v", p, err)
			}
			if err := clientcmd.Validate(*cfg); err != nil {
				t.Errorf("%s: invalid: %v", p, err)
			}
			ctx := cfg.Contexts[cfg.CurrentContext]
			cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
			// Names: the admin kubeconfig is named as the operator's
			// (user and context after the cluster), a component's user@cluster.
			name := b.Metadata.ClusterName
			wantUser, wantContext := want.cn, want.cn+"@"+name
			if stem == "admin" {
				wantUser, wantContext = name+"-admin", name
			}
			if ctx.Cluster != name || ctx.AuthInfo != wantUser || cfg.CurrentContext != wantContext ||
				len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
				t.Errorf("%s: context %q (cluster %q, user %q), want %q (%q, %q)", p, cfg.CurrentContext, ctx.Cluster, ctx.AuthInfo, wantContext, name, wantUser)
			}
			if cluster.Server != want.server {
				t.Errorf("%s: server %q, want %q", p, cluster.Server, want.server)
			}
			if string(cluster.CertificateAuthorityData) != string(cp.trust.CAs[pki.ClusterCA].CertPEM) {
				t.Errorf("%s: CA data is not the cluster CA", p)
			}
			cert, err := pki.ParseCert(user.ClientCertificateData)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: cp.caPool(pki.ClusterCA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("%s: client cert does not chain to the cluster CA: %v", p, err)
			}
			if cert.Subject.CommonName != want.cn || !slices.Equal(cert.Subject.Organization, want.orgs) {
				t.Errorf("%s: subject CN=%q O=%v, want CN=%q O=%v", p, cert.Subject.CommonName, cert.Subject.Organization, want.cn, want.orgs)
			}
			key, err := pki.ParseKey(user.ClientKeyData)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey) {
				t.Errorf("%s: client key does not match its certificate", p)
			}
		}
	}
}

func TestCertsChainAndServe(t *testing.T) {
	cp, bundles := realBundles(t)
	type check struct {
		name  pki.Name
		ca    pki.Name
		usage x509.ExtKeyUsage
		cn    string
		hosts []string // names and IPs the cert must serve
	}
	for _, b := range bundles {
		n := selfNode(t, b)
		checks := []check{
			{pki.APIServer, pki.ClusterCA, x509.ExtKeyUsageServerAuth, n.Name, []string{
				n.Name, "exk8s-7-2a.k8s.excloud.co.in", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", "localhost", "127.0.0.1", "10.96.0.1", n.IPv4,
			}},
			{pki.EtcdPeer, pki.EtcdCA, x509.ExtKeyUsageServerAuth, n.Name, []string{n.Name, "localhost", "127.0.0.1", n.IPv4}},
			{pki.EtcdPeer, pki.EtcdCA, x509.ExtKeyUsageClientAuth, n.Name, nil},
			{pki.KubeletServing, pki.ClusterCA, x509.ExtKeyUsageServerAuth, n.Name, []string{n.Name, n.IPv4}},
			{pki.APIServerEtcdClient, pki.EtcdCA, x509.ExtKeyUsageClientAuth, "kube-apiserver-etcd-client", nil},
			{pki.APIServerKubeletClient, pki.ClusterCA, x509.ExtKeyUsageClientAuth, "kube-apiserver-kubelet-client", nil},
			{pki.FrontProxyClient, pki.FrontProxyCA, x509.ExtKeyUsageClientAuth, "front-proxy-client", nil},
		}
		if n.PublicIPv4 != "" {
			checks[0].hosts = append(checks[0].hosts, n.PublicIPv4)
		}
		for _, c := range checks {
			cert, err := pki.ParseCert([]byte(mustFile(t, b, CertPath(c.name))))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if cert.Subject.CommonName != c.cn {
				t.Errorf("%s of %s: CN %q, want %q", c.name, n.Name, cert.Subject.CommonName, c.cn)
			}
			opts := x509.VerifyOptions{Roots: cp.caPool(c.ca), KeyUsages: []x509.ExtKeyUsage{c.usage}}
			if _, err := cert.Verify(opts); err != nil {
				t.Errorf("%s of %s does not chain to %s for %v: %v", c.name, n.Name, c.ca, c.usage, err)
			}
			for _, h := range c.hosts {
				opts.DNSName = h
				if _, err := cert.Verify(opts); err != nil {
					t.Errorf("%s of %s does not serve %s: %v", c.name, n.Name, h, err)
				}
			}
		}
		// The bundle never trusts the wrong CA: each CA file is its own CA.
		for _, ca := range requiredCAs {
			if mustFile(t, b, CertPath(ca)) != string(cp.trust.CAs[ca].CertPEM) {
				t.Errorf("%s in the bundle is not the cluster's %s", CertPath(ca), ca)
			}
		}
	}
}

func TestScriptsPassBashAndShellcheck(t *testing.T) {
	_, bundles := realBundles(t)
	r := newTestRenderer(t)
	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scripts := map[string]string{"bootstrap-userdata.sh": ud}
	bc, bn := bridgeCluster()
	_, bridge := realBundlesOf(t, bc, bn)
	for _, f := range append(bundles[101].Files, bridge[102].Files...) {
		if strings.HasSuffix(f.Path, ".sh") {
			scripts[filepath.Base(f.Path)] = f.Content // the same but for exk8s-pod-network.sh, bridge's only
		}
	}
	rc, rn := replacementCluster() // a node made by a replacement: the join script, and its bootstrap's join steps
	_, joining := realBundlesOf(t, rc, rn)
	scripts["exk8s-etcd-join.sh"] = mustFile(t, joining[104], EtcdJoinScript)
	scripts["exk8s-bootstrap-control-plane-joining.sh"] = mustFile(t, joining[104], binDir+"/exk8s-bootstrap-control-plane.sh")
	// A worker's shim, bootstrap, prerequisites (no etcd) and renewal scripts.
	worker, err := r.RenderWorker(workerInput(t, bc))
	if err != nil {
		t.Fatal(err)
	}
	scripts["exk8s-bootstrap-worker.sh"] = fileIn(t, worker, binDir+"/exk8s-bootstrap-worker.sh")
	scripts["exk8s-install-prereqs-worker.sh"] = fileIn(t, worker, binDir+"/exk8s-install-prereqs.sh")
	scripts["exk8s-drain-node.sh"] = fileIn(t, worker, binDir+"/exk8s-drain-node.sh")
	scripts["exk8s-renew-worker-certificates.sh"] = fileIn(t, worker, RenewalScript)
	scripts["exk8s-health-report-worker.sh"] = fileIn(t, worker, HealthScript) // the control plane's is among the bundle's
	if scripts["bootstrap-userdata-worker.sh"], err = r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in", Worker: true}); err != nil {
		t.Fatal(err)
	}
	// Under flannel: its conflist writer, and the scripts that start it and apply flannel.
	fc, fn := flannelCluster()
	_, flannel := realBundlesOf(t, fc, fn)
	scripts["exk8s-flannel-cni.sh"] = mustFile(t, flannel[101], binDir+"/exk8s-flannel-cni.sh")
	scripts["exk8s-bootstrap-control-plane-flannel.sh"] = mustFile(t, flannel[101], binDir+"/exk8s-bootstrap-control-plane.sh")
	scripts["exk8s-install-cluster-addons-flannel.sh"] = mustFile(t, flannel[101], binDir+"/exk8s-install-cluster-addons.sh")
	flannelWorker, err := r.RenderWorker(workerInput(t, fc))
	if err != nil {
		t.Fatal(err)
	}
	scripts["exk8s-bootstrap-worker-flannel.sh"] = fileIn(t, flannelWorker, binDir+"/exk8s-bootstrap-worker.sh")
	if len(scripts) != 26 {
		t.Fatalf("want the shim, 3 scripts, exk8s-progress.sh, exk8s-renew-certificates.sh, exk8s-etcd-snapshot.sh, exk8s-etcd-crl.sh, exk8s-etcd-membership.sh, exk8s-upgrade-addons.sh, exk8s-imds-guard.sh, exk8s-control-plane-taint.sh, exk8s-health-report.sh, the bridge CNI's exk8s-pod-network.sh, the join script, the joining node's bootstrap script, a worker's shim, bootstrap, prerequisites, drain, renewal and health scripts, and flannel's conflist writer with the bootstrap, addons and worker scripts that start it, got %d", len(scripts))
	}
	_, shellcheckErr := exec.LookPath("shellcheck")
	for name, content := range scripts {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(content, "#!/usr/bin/env bash\n") {
			t.Errorf("%s: no bash shebang", name)
		}
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", name, err, out)
		}
		if shellcheckErr == nil {
			if out, err := exec.Command("shellcheck", "-s", "bash", p).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", name, err, out)
			}
		}
	}
	if shellcheckErr != nil {
		t.Error("shellcheck is not installed (apt-get install shellcheck; .ci/run does): only bash -n ran")
	}
}

func TestOnlyLowestOrdinalIsInitial(t *testing.T) {
	_, bundles := realBundles(t)
	for vm, b := range bundles {
		env := mustFile(t, b, "/etc/exk8s/config/cluster.env")
		want := vm == 101 // ordinal 1
		if b.Metadata.IsInitialControlPlane != want || strings.Contains(env, "IS_INITIAL_CONTROL_PLANE=true\n") != want {
			t.Errorf("VM %d: initial=%v, want %v", vm, b.Metadata.IsInitialControlPlane, want)
		}
	}
	// Ordinals decide, not list order nor VM id.
	c, nodes := testCluster()
	nodes[1].Ordinal = 9 // VM 101 is no longer the lowest; VM 102 (ordinal 2) is.
	cp := issueClusterPKI(t, c, nodes, time.Now)
	b, err := newTestRenderer(t).Render(cp.input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Metadata.IsInitialControlPlane {
		t.Error("lowest ordinal (VM 102) is not the initial control plane")
	}
	if !strings.HasPrefix(b.Metadata.EtcdInitialCluster, "cp-2.cluster-42.internal=") {
		t.Errorf("etcd initial cluster not ordered by ordinal: %s", b.Metadata.EtcdInitialCluster)
	}
}

func TestNoForeignPrivateKeys(t *testing.T) {
	cp, bundles := realBundles(t)
	for vm, b := range bundles {
		var all strings.Builder
		for _, f := range b.Files {
			all.WriteString(f.Content)
		}
		joined := all.String()
		for other, ids := range cp.identities {
			if other == vm {
				continue
			}
			for name, kp := range ids {
				if strings.Contains(joined, string(kp.KeyPEM)) {
					t.Errorf("bundle of VM %d carries VM %d's %s key", vm, other, name)
				}
			}
		}
		for name, ca := range cp.trust.CAs {
			key, err := pki.EncodeKey(ca.Key)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(joined, string(key)) {
				t.Errorf("bundle of VM %d carries the %s key", vm, name)
			}
		}
	}
}

func TestModes(t *testing.T) {
	_, bundles := realBundles(t)
	b := bundles[101]
	for _, f := range b.Files {
		var want os.FileMode
		switch {
		case strings.HasSuffix(f.Path, "-key.pem"), strings.HasSuffix(f.Path, ".kubeconfig"), f.Path == "/etc/exk8s/apiserver/encryption-config.yaml",
			strings.HasPrefix(f.Path, "/etc/kubernetes/manifests/"):
			want = 0o600
		case strings.HasSuffix(f.Path, ".sh"):
			want = 0o755
		default:
			want = 0o644
		}
		if f.Mode != want {
			t.Errorf("%s: mode %04o, want %04o", f.Path, f.Mode, want)
		}
		if strings.Contains(f.Content, "PRIVATE KEY") && f.Mode != 0o600 {
			t.Errorf("%s holds a private key but has mode %04o", f.Path, f.Mode)
		}
	}
	resp := b.Response()
	if resp.FileModes["/etc/exk8s/pki/apiserver-key.pem"] != "0600" || resp.FileModes["/usr/local/bin/exk8s-bootstrap-control-plane.sh"] != "0755" ||
		resp.FileModes["/etc/exk8s/config/cluster.env"] != "0644" {
		t.Errorf("wire modes wrong: %v", resp.FileModes)
	}
	if len(resp.Files) != len(b.Files) || len(resp.FileModes) != len(b.Files) {
		t.Errorf("response has %d files, %d modes, bundle %d", len(resp.Files), len(resp.FileModes), len(b.Files))
	}
	if !slices.IsSortedFunc(b.Files, func(x, y File) int { return strings.Compare(x.Path, y.Path) }) {
		t.Error("files are not sorted by path")
	}
}

// flags returns the "--flag=value" arguments of a rendered command.
func flags(content string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z0-9-]+)(?:=([^\s\\]*))?`).FindAllStringSubmatch(content, -1) {
		out[m[1]] = m[2]
	}
	return out
}

func TestAPIServerWiring(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		n := selfNode(t, b)
		content := mustFile(t, b, "/etc/kubernetes/manifests/kube-apiserver.yaml")
		if strings.Contains(content, "admin.pem") || strings.Contains(content, "admin-key.pem") {
			t.Errorf("kube-apiserver manifest references the admin cert")
		}
		got := flags(content)
		want := map[string]string{
			"advertise-address":                       n.IPv4,
			"bind-address":                            "0.0.0.0",
			"secure-port":                             "6443",
			"etcd-cafile":                             "/etc/exk8s/pki/etcd-ca.pem",
			"etcd-certfile":                           "/etc/exk8s/pki/apiserver-etcd-client.pem",
			"etcd-keyfile":                            "/etc/exk8s/pki/apiserver-etcd-client-key.pem",
			"etcd-servers":                            "https://127.0.0.1:2379",
			"client-ca-file":                          "/etc/exk8s/pki/ca.pem",
			"kubelet-certificate-authority":           "/etc/exk8s/pki/ca.pem",
			"kubelet-client-certificate":              "/etc/exk8s/pki/apiserver-kubelet-client.pem",
			"kubelet-client-key":                      "/etc/exk8s/pki/apiserver-kubelet-client-key.pem",
			"proxy-client-cert-file":                  "/etc/exk8s/pki/front-proxy-client.pem",
			"proxy-client-key-file":                   "/etc/exk8s/pki/front-proxy-client-key.pem",
			"requestheader-client-ca-file":            "/etc/exk8s/pki/front-proxy-ca.pem",
			"requestheader-allowed-names":             "front-proxy-client",
			"requestheader-username-headers":          "X-Remote-User",
			"requestheader-group-headers":             "X-Remote-Group",
			"requestheader-extra-headers-prefix":      "X-Remote-Extra-",
			"authorization-mode":                      "Node,RBAC",
			"enable-admission-plugins":                "NodeRestriction,DenyServiceExternalIPs",
			"service-account-extend-token-expiration": "false",
			"service-account-max-token-expiration":    "168h",
			"service-account-issuer":                  "https://exk8s-7-2a.k8s.excloud.co.in:6443",
			"service-account-key-file":                "/etc/exk8s/pki/service-account.pem",
			"service-account-signing-key-file":        "/etc/exk8s/pki/service-account-key.pem",
			"service-cluster-ip-range":                "10.96.0.0/12",
			"tls-cert-file":                           "/etc/exk8s/pki/apiserver.pem",
			"tls-private-key-file":                    "/etc/exk8s/pki/apiserver-key.pem",
			"allow-privileged":                        "true",
			"profiling":                               "false",
			"tls-min-version":                         "VersionTLS12",
			"encryption-provider-config":              "/etc/exk8s/apiserver/encryption-config.yaml",
			"authentication-config":                   "/etc/exk8s/apiserver/authentication-config.yaml",
			"audit-policy-file":                       "/etc/exk8s/apiserver/audit-policy.yaml",
			"audit-log-path":                          "/var/log/kubernetes/audit/audit.log",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s kube-apiserver --%s=%q, want %q", n.Name, k, got[k], v)
			}
		}

		cm := flags(mustFile(t, b, "/etc/kubernetes/manifests/kube-controller-manager.yaml"))
		for k, v := range map[string]string{
			"allocate-node-cidrs":              "false",
			"kubeconfig":                       "/etc/exk8s/kubeconfig/controller-manager.kubeconfig",
			"authentication-kubeconfig":        "/etc/exk8s/kubeconfig/controller-manager.kubeconfig",
			"authorization-kubeconfig":         "/etc/exk8s/kubeconfig/controller-manager.kubeconfig",
			"bind-address":                     "127.0.0.1",
			"leader-elect":                     "true",
			"cluster-name":                     "exk8s-7-2a",
			"cluster-cidr":                     "172.16.0.0/12",
			"root-ca-file":                     "/etc/exk8s/pki/ca.pem",
			"service-account-private-key-file": "/etc/exk8s/pki/service-account-key.pem",
			"use-service-account-credentials":  "true",
			"profiling":                        "false",
			"tls-min-version":                  "VersionTLS12",
		} {
			if cm[k] != v {
				t.Errorf("%s kube-controller-manager --%s=%q, want %q", n.Name, k, cm[k], v)
			}
		}
		sch := flags(mustFile(t, b, "/etc/kubernetes/manifests/kube-scheduler.yaml"))
		for k, v := range map[string]string{
			"kubeconfig": "/etc/exk8s/kubeconfig/scheduler.kubeconfig", "bind-address": "127.0.0.1", "leader-elect": "true",
			"profiling": "false", "tls-min-version": "VersionTLS12",
		} {
			if sch[k] != v {
				t.Errorf("%s kube-scheduler --%s=%q, want %q", n.Name, k, sch[k], v)
			}
		}
	}
}

func TestEtcdUnit(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		n := selfNode(t, b)
		got := flags(mustFile(t, b, "/etc/systemd/system/etcd.service"))
		for k, v := range map[string]string{
			"name":                        n.Name,
			"data-dir":                    "/var/lib/etcd",
			"listen-client-urls":          "https://" + n.IPv4 + ":2379,https://127.0.0.1:2379",
			"advertise-client-urls":       "https://" + n.IPv4 + ":2379",
			"listen-peer-urls":            "https://" + n.IPv4 + ":2380",
			"initial-advertise-peer-urls": "https://" + n.IPv4 + ":2380",
			"initial-cluster":             "cp-1.cluster-42.internal=https://10.0.0.11:2380,cp-2.cluster-42.internal=https://10.0.0.12:2380,cp-3.cluster-42.internal=https://10.0.0.13:2380",
			"trusted-ca-file":             "/etc/exk8s/pki/etcd-ca.pem",
			"peer-trusted-ca-file":        "/etc/exk8s/pki/etcd-ca.pem",
			"cert-file":                   "/etc/exk8s/pki/etcd-peer.pem",
			"key-file":                    "/etc/exk8s/pki/etcd-peer-key.pem",
			"peer-cert-file":              "/etc/exk8s/pki/etcd-peer.pem",
			"peer-key-file":               "/etc/exk8s/pki/etcd-peer-key.pem",
			"client-cert-auth":            "",
			"peer-client-cert-auth":       "",
			"tls-min-version":             "TLS1.2",
		} {
			if w, ok := got[k]; !ok || w != v {
				t.Errorf("%s etcd --%s=%q, want %q", n.Name, k, w, v)
			}
		}
		if b.Metadata.EtcdInitialCluster != got["initial-cluster"] {
			t.Errorf("metadata etcd initial cluster %q differs from the unit's", b.Metadata.EtcdInitialCluster)
		}
	}
}

// TestReferencedPathsExist: every /etc/exk8s file a rendered file names is
// in the bundle (catches a template typo the type system cannot).
func TestReferencedPathsExist(t *testing.T) {
	_, bundles := realBundles(t)
	b := bundles[101]
	re := regexp.MustCompile(`/etc/exk8s/[a-z0-9./-]+\.(pem|kubeconfig|env|yaml|sha256)`)
	// The shim writes it beside the bundle: where this VM reports its phases.
	byShim := map[string]bool{progressEnv: true}
	for _, f := range b.Files {
		for _, ref := range re.FindAllString(f.Content, -1) {
			if _, ok := b.File(ref); !ok && !byShim[ref] {
				t.Errorf("%s references %s, which the bundle does not contain", f.Path, ref)
			}
		}
	}
}

func TestEveryTemplateIsUsed(t *testing.T) {
	r := newTestRenderer(t)
	used := map[string]bool{"bootstrap-userdata.sh": true}
	c, nodes := testCluster()
	cp := issueClusterPKI(t, c, nodes, time.Now)
	markParts := func(v *view, list []part) {
		for _, p := range list {
			for _, s := range p.files(v) {
				if s.template != "" {
					used[s.template] = true
				}
			}
		}
	}
	markUsed := func(in Input) {
		view, _, err := newView(&in)
		if err != nil {
			t.Fatal(err)
		}
		markParts(view, parts())
	}
	for _, cni := range clusterfacts.CNIs() {
		c.CNI = cni
		markUsed(cp.input(c, nodes, 101))
	}
	rc, rnodes := replacementCluster() // a node made by a replacement: the join script
	markUsed(issueClusterPKI(t, rc, rnodes, time.Now).input(rc, rnodes, 104))
	c.Restored = true // a restored cluster's node: the restore script
	markUsed(cp.input(c, nodes, 101))
	// A worker's parts: its bootstrap and renewal scripts.
	wv, err := workerViewOf(workerInput(t, c))
	if err != nil {
		t.Fatal(err)
	}
	markParts(wv, workerParts())
	// A template another one includes ({{ template "name" }}) is used too.
	for name := range used {
		markIncluded(r.tmpl.Lookup(name).Tree.Root, r, used)
	}
	for _, tmpl := range r.tmpl.Templates() {
		if tmpl.Name() != "bundle" && !used[tmpl.Name()] {
			t.Errorf("template %s is embedded but never rendered", tmpl.Name())
		}
	}
	if len(used) != 60 {
		t.Errorf("%d templates used, want the seed's 16 plus artifacts.sha256, exk8s-progress.sh and its shell library, control-plane-rbac.yaml, containerd.service and its scopes' stop timeout, the renewal's timer, service and script, the etcd snapshot's timer, service and script, the etcd CRL's timer, service and script, the etcd membership's timer, service and script, the addons upgrade's timer, service and script, the IMDS guard's script and unit, the bridge CNI's script and unit, the API server's encryption, audit and authentication configurations, the etcd join script, the etcd restore script, the control-plane taint's unit and script, the worker's bootstrap script, its drain's unit, its undo's unit, the power-off's drop-in and their script, its renewal script, flannel's manifest and its conflist's script and unit, and the health report's timer, service and script", len(used))
	}
}

// markIncluded marks used every template node includes, and what those
// include in turn.
func markIncluded(node parse.Node, r *Renderer, used map[string]bool) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				markIncluded(c, r, used)
			}
		}
	case *parse.IfNode:
		markIncluded(n.List, r, used)
		markIncluded(n.ElseList, r, used)
	case *parse.RangeNode:
		markIncluded(n.List, r, used)
		markIncluded(n.ElseList, r, used)
	case *parse.WithNode:
		markIncluded(n.List, r, used)
		markIncluded(n.ElseList, r, used)
	case *parse.TemplateNode:
		if !used[n.Name] {
			used[n.Name] = true
			markIncluded(r.tmpl.Lookup(n.Name).Tree.Root, r, used)
		}
	}
}

// TestAPIServerNamesOnlyItsOwnEtcdMember: every API server's
// --etcd-servers is its node's own member on loopback, which that node's
// etcd listens on and whose serving certificate names, so no render
// names another node (a member that comes or goes changes no flag).
func TestAPIServerNamesOnlyItsOwnEtcdMember(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		apiserver := flags(mustFile(t, b, "/etc/kubernetes/manifests/kube-apiserver.yaml"))
		if got := apiserver["etcd-servers"]; got != "https://127.0.0.1:2379" {
			t.Errorf("%s: --etcd-servers=%s, want only its own member", b.Metadata.NodeName, got)
		}
		unit := mustFile(t, b, "/etc/systemd/system/etcd.service")
		if !strings.Contains(unit, "--listen-client-urls=https://"+selfNode(t, b).IPv4+":2379,https://127.0.0.1:2379 ") {
			t.Errorf("%s: etcd does not listen on loopback:\n%s", b.Metadata.NodeName, unit)
		}
		certs := certsIn(t, CertPath(pki.EtcdPeer), mustFile(t, b, CertPath(pki.EtcdPeer)))
		if len(certs) != 1 || certs[0].VerifyHostname("127.0.0.1") != nil {
			t.Errorf("%s: the etcd serving certificate does not name 127.0.0.1", b.Metadata.NodeName)
		}
	}
}
