package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/excloud/k8sapi/e2e/harness"
)

// Paths the bundle renders (the contract with internal/bundle).
const (
	etcdUnitPath      = "/etc/systemd/system/etcd.service"
	staticPodDir      = "/etc/kubernetes/manifests"
	kubeconfigDir     = "/etc/exk8s/kubeconfig"
	pkiDir            = "/etc/exk8s/pki"
	addonManifestsDir = "/etc/exk8s/manifests"
)

// node is one control-plane VM turned into a host of its own.
type node struct {
	n      int // 1-based
	vmID   int64
	addr   netip.Prefix
	ns     string
	root   string // the node's "/"
	name   string // node name (etcd --name, kubelet identity)
	etcd   harness.Command
	static map[string]harness.Command // kube-apiserver, kube-controller-manager, kube-scheduler
}

func (n *node) ip() string           { return n.addr.Addr().String() }
func (n *node) path(p string) string { return harness.RerootPath(n.root, p) }
func (n *node) label(c string) string {
	return fmt.Sprintf("n%d/%s", n.n, c)
}

func (n *node) read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(n.path(p))
	if err != nil {
		fatalf(t, "node %d: the bundle did not write %s: %v", n.n, p, err)
	}
	return b
}

// TestBundlesBootControlPlane proves the rendered bundles: found a three-node
// cluster through the API, run each VM's userdata shim against the
// simulator's IMDS, and boot the real components from exactly the rendered
// flags, each node in a network namespace of its own.
func TestBundlesBootControlPlane(t *testing.T) {
	requireRoot(t)
	started := time.Now()
	r := newRun(t, "cp")

	// 1. The local stack and a founded cluster.
	st := startStack(t, r)
	cl := foundCluster(t, r, st, 3)
	t.Logf("founded %s (%s): VMs %v in %s", cl.Name, cl.ControlPlaneDNSName, cl.ControlPlaneVMIDs, time.Since(started).Round(time.Millisecond))
	vms := loadVMs(t, st, cl.ControlPlaneVMIDs)

	// 2. One host per VM, carrying the address the simulator gave it.
	network := nodeNetwork(t, r, vms)
	dial := harness.Dialer(network.Switch)

	// 3. Each VM's rendered shim writes its bundle under the node's root.
	nodes := make([]*node, len(vms))
	for i, vm := range vms {
		nd := &node{n: i + 1, vmID: vm.id, addr: vm.addr, ns: network.Nodes[i].NS, root: filepath.Join(r.WorkDir, fmt.Sprintf("node-%d", i+1)), static: map[string]harness.Command{}}
		runShim(t, r, st, nd, vm.userdata)
		checkKeyModes(t, nd)
		parseNode(t, nd)
		nodes[i] = nd
	}
	t.Logf("bundles written for %d nodes at %s", len(nodes), time.Since(started).Round(time.Millisecond))
	// k8sapi recorded each fetch: the operator sees every node past pending.
	checkBootstrapPhase(t, st, cl.ClusterID, "bootstrapping", "bundle_fetched")

	// 4. The real components, flags as rendered, only paths re-rooted.
	bootStart := time.Now()
	for _, nd := range nodes {
		runStartPre(t, r, nd, "etcd", nd.etcd)
		startComponent(t, r, nd, "etcd", nd.etcd)
	}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		for _, nd := range nodes {
			startComponent(t, r, nd, c, nd.static[c])
		}
	}

	// 5. The assertions, each with a deadline.
	n1 := nodes[0]
	etcdTLS, err := harness.MutualTLS(n1.path(pkiDir+"/etcd-ca.pem"), n1.path(pkiDir+"/apiserver-etcd-client.pem"), n1.path(pkiDir+"/apiserver-etcd-client-key.pem"))
	if err != nil {
		fatal(t, err)
	}
	// Every API server names only its own member (127.0.0.1), so the
	// members' addresses are each etcd's advertised client URL.
	etcdServers := advertisedClientURLs(t, nodes)
	eventually(t, r, "3 healthy etcd members over mutual TLS", labels(nodes, "etcd"), 3*time.Minute, func(ctx context.Context) (string, error) {
		cli, err := harness.EtcdClient(etcdServers, etcdTLS, dial)
		if err != nil {
			return "", err
		}
		defer cli.Close()
		return harness.EtcdHealth(ctx, cli, len(nodes))
	})

	adminKubeconfig := n1.read(t, kubeconfigDir+"/admin.kubeconfig")
	admins := make([]*rest.Config, len(nodes))
	for i, nd := range nodes {
		cfg, err := harness.KubeConfig(adminKubeconfig, "https://"+nd.ip()+":6443", dial, nil)
		if err != nil {
			fatal(t, err)
		}
		admins[i] = cfg
	}
	for i, nd := range nodes {
		eventually(t, r, fmt.Sprintf("kube-apiserver on node %d (%s) /readyz", nd.n, nd.ip()), []string{nd.label("kube-apiserver")}, 4*time.Minute, func(ctx context.Context) (string, error) {
			return "ok", harness.Readyz(ctx, admins[i])
		})
	}
	t.Logf("etcd and all API servers ready %s after start", time.Since(bootStart).Round(time.Millisecond))
	admin := kubernetes.NewForConfigOrDie(admins[0])

	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		eventually(t, r, "leader lease kube-system/"+lease, labels(nodes, lease), 3*time.Minute, func(ctx context.Context) (string, error) {
			l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				return "", fmt.Errorf("lease has no holder")
			}
			if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > time.Minute {
				return "", fmt.Errorf("lease held by %s is not being renewed", *l.Spec.HolderIdentity)
			}
			holder := *l.Spec.HolderIdentity
			if !heldByNode(holder, nodes) {
				return "", fmt.Errorf("lease held by %q, which names none of the nodes", holder)
			}
			return "held by " + holder, nil
		})
	}

	t.Run("kubelet identity is confined to its own Node", func(t *testing.T) {
		checkNodeIdentity(t, r, nodes, dial)
	})
	t.Run("a removed node drains itself and deletes its own Node; the taint's identity only taints", func(t *testing.T) {
		checkNodeSelfRemoval(t, r, admins[0], nodes, dial)
	})
	t.Run("service account token from TokenRequest is accepted", func(t *testing.T) {
		checkServiceAccountToken(t, admin, nodes, adminKubeconfig, dial)
	})
	t.Run("addon manifests pass server-side dry-run apply", func(t *testing.T) {
		for _, m := range []string{"kube-proxy.yaml", "coredns.yaml"} {
			manifest := n1.read(t, addonManifestsDir+"/"+m)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			objs, err := harness.DryRunApply(ctx, admins[0], manifest)
			cancel()
			if err != nil {
				r.Suspect(n1.label("kube-apiserver"))
				errorf(t, "%s: %v", m, err)
				continue
			}
			t.Logf("%s accepted: %s", m, strings.Join(objs, ", "))
		}
	})
	t.Run("kube-proxy's ServiceAccount reaches the API by the DNS name as system:node-proxier only", func(t *testing.T) {
		checkKubeProxyIdentity(t, admins[0], adminKubeconfig, n1.read(t, addonManifestsDir+"/kube-proxy.yaml"), cl.ControlPlaneDNSName, n1, dial)
	})
	t.Run("operators are cluster-admin through RBAC, and only through it", func(t *testing.T) {
		checkOperatorsThroughRBAC(t, r, st, cl, admins[0], n1, dial)
	})
	t.Run("kubeconfig from POST /clusters works through the DNS name", func(t *testing.T) {
		checkFoundingKubeconfig(t, cl, n1, dial)
	})
	t.Run("kubeconfig from POST /clusters/{id}/kubeconfig is k8sapi:cluster-admins of who asked", func(t *testing.T) {
		checkIssuedKubeconfig(t, st, cl, n1, dial)
	})
	t.Run("secrets encrypted at rest", func(t *testing.T) {
		checkSecretsAtRest(t, admin, etcdServers, n1, dial)
	})
	t.Run("anonymous refused except health", func(t *testing.T) {
		checkAnonymous(t, admins[0])
	})
	t.Logf("proof finished %s after the components started (%s in all)", time.Since(bootStart).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
}

// heldByNode says whether a leader-election identity (hostname_uuid) names
// one of the nodes: each component runs with its node's hostname.
func heldByNode(holder string, nodes []*node) bool {
	for _, nd := range nodes {
		if strings.HasPrefix(holder, nd.name+"_") {
			return true
		}
	}
	return false
}

func labels(nodes []*node, component string) []string {
	var out []string
	for _, nd := range nodes {
		out = append(out, nd.label(component))
	}
	return out
}

// eventually retries check until it succeeds or timeout passes; a component
// that dies ends the wait at once. On failure the suspects' logs are shown.
func eventually(t *testing.T, r *harness.Run, what string, suspects []string, timeout time.Duration, check func(context.Context) (string, error)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last error
	for {
		if err := r.Dead(); err != nil {
			// The dead component's log is the one that matters (Dead marks it).
			fatalf(t, "while waiting for %s: %v (last check: %v)", what, err, last)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		summary, err := check(ctx)
		cancel()
		if err == nil {
			t.Logf("%s: %s (%s)", what, summary, time.Since(start).Round(time.Millisecond))
			return
		}
		last = err
		if time.Now().After(deadline) {
			for _, s := range suspects {
				r.Suspect(s)
			}
			fatalf(t, "%s: not true after %s: %v", what, timeout, last)
		}
		time.Sleep(time.Second)
	}
}

// checkKeyModes: the shim wrote every private key and kubeconfig 0600, as
// the bundle's modes say.
func checkKeyModes(t *testing.T, nd *node) {
	t.Helper()
	keys, _ := filepath.Glob(nd.path(pkiDir + "/*-key.pem"))
	kubeconfigs, _ := filepath.Glob(nd.path(kubeconfigDir + "/*.kubeconfig"))
	if len(keys) == 0 || len(kubeconfigs) == 0 {
		fatalf(t, "node %d: the bundle wrote %d private keys and %d kubeconfigs", nd.n, len(keys), len(kubeconfigs))
	}
	for _, f := range append(keys, kubeconfigs...) {
		st, err := os.Stat(f)
		if err != nil {
			fatal(t, err)
		}
		if st.Mode().Perm() != 0o600 {
			rel, _ := filepath.Rel(nd.root, f)
			errorf(t, "node %d: /%s has mode %04o, want 0600", nd.n, rel, st.Mode().Perm())
		}
	}
}

// parseNode reads the rendered etcd unit and static pod manifests.
func parseNode(t *testing.T, nd *node) {
	t.Helper()
	cmd, err := harness.ParseUnit(string(nd.read(t, etcdUnitPath)))
	if err != nil {
		fatalf(t, "node %d: %s: %v", nd.n, etcdUnitPath, err)
	}
	env := append([]string(nil), cmd.Env...)
	for _, f := range cmd.EnvFiles {
		optional := strings.HasPrefix(f, "-")
		b, err := os.ReadFile(nd.path(strings.TrimPrefix(f, "-")))
		if err != nil {
			if optional {
				continue
			}
			fatalf(t, "node %d: EnvironmentFile %s: %v", nd.n, f, err)
		}
		fileEnv, err := harness.ParseEnvFile(string(b))
		if err != nil {
			fatalf(t, "node %d: %s: %v", nd.n, f, err)
		}
		env = append(fileEnv, env...)
	}
	if cmd.Argv, err = harness.ExpandEnv(cmd.Argv, env); err != nil {
		fatalf(t, "node %d: %s: %v", nd.n, etcdUnitPath, err)
	}
	cmd.Env = env
	nd.etcd = cmd
	name, ok := cmd.Flag("name")
	if !ok {
		fatalf(t, "node %d: etcd.service has no --name", nd.n)
	}
	nd.name = name
	if adv, _ := cmd.Flag("advertise-client-urls"); !strings.Contains(adv, "//"+nd.ip()+":") {
		fatalf(t, "node %d: etcd advertises %q, but the VM's address is %s", nd.n, adv, nd.ip())
	}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		p := staticPodDir + "/" + c + ".yaml"
		pc, err := harness.ParsePodManifest(string(nd.read(t, p)))
		if err != nil {
			fatalf(t, "node %d: %s: %v", nd.n, p, err)
		}
		if pc.Program() != c {
			fatalf(t, "node %d: %s runs %q", nd.n, p, pc.Program())
		}
		nd.static[c] = pc
	}
}

// startComponent starts one rendered command inside the node's namespace:
// the built binary for its program, its rendered flags with host paths
// moved under the node's root, its rendered environment.
// advertisedClientURLs is every node's etcd --advertise-client-urls.
func advertisedClientURLs(t *testing.T, nodes []*node) []string {
	t.Helper()
	var urls []string
	for _, nd := range nodes {
		u, ok := nd.etcd.Flag("advertise-client-urls")
		if !ok {
			fatal(t, "etcd.service renders no --advertise-client-urls")
		}
		urls = append(urls, u)
	}
	return urls
}

func startComponent(t *testing.T, r *harness.Run, nd *node, name string, cmd harness.Command) {
	t.Helper()
	argv := cmd.Reroot(nd.root)
	argv[0] = bin(cmd.Program())
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, cmd.RerootEnv(nd.root, cmd.Env)...)
	// Folders a package or the VM image would have made.
	for _, d := range []string{"/var/lib/etcd", "/var/log/kubernetes", "/var/run/kubernetes"} {
		if err := os.MkdirAll(nd.path(d), 0o700); err != nil {
			fatal(t, err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.LogDir, fmt.Sprintf("n%d_%s.argv", nd.n, name)), []byte(strings.Join(argv, "\n")+"\n"), 0o644); err != nil {
		fatal(t, err)
	}
	if _, err := r.Start(nd.label(name), harness.Host{NS: nd.ns, Hostname: nd.name}, nd.root, env, argv); err != nil {
		fatal(t, err)
	}
}

// runStartPre runs a unit's ExecStartPre commands as systemd would before
// its ExecStart, as root over the node's root folder (EXK8S_ROOT, which
// every bundle script honours): etcd's installs the bundle's CRL, without
// which etcd refuses every handshake.
func runStartPre(t *testing.T, r *harness.Run, nd *node, name string, cmd harness.Command) {
	t.Helper()
	for _, pre := range cmd.Pre {
		c := exec.Command("bash", append([]string{nd.path(pre[0])}, pre[1:]...)...)
		c.Env = append(os.Environ(), "EXK8S_ROOT="+nd.root)
		out, err := c.CombinedOutput()
		_ = os.WriteFile(filepath.Join(r.LogDir, fmt.Sprintf("n%d_%s.pre", nd.n, name)), out, 0o644)
		if err != nil {
			fatalf(t, "node %d: %s's ExecStartPre %q: %v\n%s", nd.n, name, pre, err, out)
		}
	}
}

// checkNodeIdentity: node 1's kubelet identity creates and updates its own
// Node and may not modify node 2's (Node authorizer + NodeRestriction).
func checkNodeIdentity(t *testing.T, r *harness.Run, nodes []*node, dial harness.DialFunc) {
	r.Suspect(nodes[0].label("kube-apiserver"))
	kubelet := func(nd *node) *kubernetes.Clientset {
		cfg, err := harness.KubeConfig(nd.read(t, kubeconfigDir+"/kubelet.kubeconfig"), "", dial, nil)
		if err != nil {
			fatal(t, err)
		}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	n1, n2 := nodes[0], nodes[1]
	k1, k2 := kubelet(n1), kubelet(n2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mk := func(nd *node) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nd.name}, Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nd.ip()}},
		}}
	}
	if _, err := k1.CoreV1().Nodes().Create(ctx, mk(n1), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "node 1's kubelet identity cannot create its own Node %s: %v", n1.name, err)
	}
	own, err := k1.CoreV1().Nodes().Get(ctx, n1.name, metav1.GetOptions{})
	if err != nil {
		fatalf(t, "node 1's kubelet identity cannot read its own Node: %v", err)
	}
	if own.Annotations == nil {
		own.Annotations = map[string]string{}
	}
	own.Annotations["e2e.exk8s.io/probe"] = "updated-by-self"
	if _, err := k1.CoreV1().Nodes().Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		fatalf(t, "node 1's kubelet identity cannot update its own Node: %v", err)
	}
	own, err = k1.CoreV1().Nodes().Get(ctx, n1.name, metav1.GetOptions{})
	if err != nil {
		fatal(t, err)
	}
	own.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "E2EProbe", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := k1.CoreV1().Nodes().UpdateStatus(ctx, own, metav1.UpdateOptions{}); err != nil {
		fatalf(t, "node 1's kubelet identity cannot update its own Node status: %v", err)
	}
	t.Logf("node 1 (%s) created and updated its own Node", n1.name)

	// Node 2 registers itself, then node 1 tries to touch it.
	if _, err := k2.CoreV1().Nodes().Create(ctx, mk(n2), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "node 2's kubelet identity cannot create its own Node %s: %v", n2.name, err)
	}
	other, err := k2.CoreV1().Nodes().Get(ctx, n2.name, metav1.GetOptions{})
	if err != nil {
		fatalf(t, "node 2's kubelet identity cannot read its own Node: %v", err)
	}
	// The Node authorizer (AuthorizeNodeWithSelectors, on in this release) lets a node read only its own Node.
	if _, err := k1.CoreV1().Nodes().Get(ctx, n2.name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		fatalf(t, "node 1 reading node 2's Node: want 403 Forbidden, got %v", err)
	}
	other.Annotations = map[string]string{"e2e.exk8s.io/probe": "updated-by-node-1"}
	_, err = k1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) {
		fatalf(t, "node 1 updating node 2's Node: want 403 Forbidden, got %v", err)
	}
	t.Logf("node 1 updating node 2: %v", err)
	err = k1.CoreV1().Nodes().Delete(ctx, n2.name, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		fatalf(t, "node 1 deleting node 2's Node: want 403 Forbidden, got %v", err)
	}
	_, err = k1.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-" + n1.name}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		fatalf(t, "node 1 creating another Node: want 403 Forbidden, got %v", err)
	}
}

// checkServiceAccountToken: a token issued through TokenRequest on node 1
// is accepted by TokenReview and by another API server (node 2), which
// answers 200 or 403 for it, never 401.
func checkServiceAccountToken(t *testing.T, admin *kubernetes.Clientset, nodes []*node, adminKubeconfig []byte, dial harness.DialFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns, sa = "default", "exk8s-e2e-probe"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalf(t, "creating service account: %v", err)
	}
	exp := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		fatalf(t, "TokenRequest: %v", err)
	}
	token := tr.Status.Token
	rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		fatalf(t, "TokenReview: %v", err)
	}
	want := "system:serviceaccount:" + ns + ":" + sa
	if !rev.Status.Authenticated || rev.Status.User.Username != want {
		fatalf(t, "TokenReview: authenticated=%v user=%q error=%q; want %s", rev.Status.Authenticated, rev.Status.User.Username, rev.Status.Error, want)
	}
	// The bearer token alone, against another API server.
	base, err := harness.KubeConfig(adminKubeconfig, "https://"+nodes[len(nodes)-1].ip()+":6443", dial, nil)
	if err != nil {
		fatal(t, err)
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = token
	cs := kubernetes.NewForConfigOrDie(cfg)
	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		t.Logf("service account token: TokenReview says %s; listing pods on node %d answered 200", want, len(nodes))
	case apierrors.IsForbidden(err):
		t.Logf("service account token: TokenReview says %s; listing pods on node %d answered 403 (authenticated, not authorized): %v", want, len(nodes), err)
	default:
		fatalf(t, "request with the service account token: want 200 or 403, got %v", err)
	}
}

// checkFoundingKubeconfig: the kubeconfig POST /clusters returned reaches
// node 1 once its control-plane DNS name is pointed there.
func checkFoundingKubeconfig(t *testing.T, cl clusterResponse, n1 *node, dial harness.DialFunc) {
	resolve := map[string]string{cl.ControlPlaneDNSName + ":6443": n1.ip() + ":6443"}
	cfg, err := harness.KubeConfig([]byte(cl.Kubeconfig), "", dial, resolve)
	if err != nil {
		fatal(t, err)
	}
	if want := "https://" + cl.ControlPlaneDNSName + ":6443"; cfg.Host != want {
		errorf(t, "founding kubeconfig server is %q, want %q", cfg.Host, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.Readyz(ctx, cfg); err != nil {
		fatalf(t, "founding kubeconfig against node 1 as %s: %v", cl.ControlPlaneDNSName, err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	nsl, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf(t, "founding kubeconfig: listing namespaces: %v", err)
	}
	var names []string
	for _, n := range nsl.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	t.Logf("founding kubeconfig via %s -> %s: namespaces %v", cl.ControlPlaneDNSName, n1.ip(), names)
}

// checkIssuedKubeconfig: an admin kubeconfig asked for after founding, and
// the founding's own, authenticate at a real API server as the user naming
// who asked (k8sapi:org:<org>:token:<the token's fingerprint>) in
// k8sapi:cluster-admins (never system:masters), and work through its
// binding.
func checkIssuedKubeconfig(t *testing.T, st stack, cl clusterResponse, n1 *node, dial harness.DialFunc) {
	raw := apiCall(t, st, http.MethodPost, fmt.Sprintf("/clusters/%d/kubeconfig", cl.ClusterID), `{"ttl":"10m"}`, http.StatusCreated)
	var issued struct {
		Kubeconfig string    `json:"kubeconfig"`
		Context    string    `json:"context"`
		ExpiresAt  time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(raw, &issued); err != nil {
		fatal(t, err)
	}
	if issued.Context != cl.Name || time.Until(issued.ExpiresAt) > 10*time.Minute || time.Until(issued.ExpiresAt) < 8*time.Minute {
		errorf(t, "issued: context %q, expires %v; want %q, in 10 minutes", issued.Context, issued.ExpiresAt, cl.Name)
	}
	sum := sha256.Sum256([]byte(st.get(t, "DEV_TOKEN")))
	wantUser := "k8sapi:org:1:token:" + hex.EncodeToString(sum[:])[:12]
	resolve := map[string]string{cl.ControlPlaneDNSName + ":6443": n1.ip() + ":6443"}
	for what, kubeconfig := range map[string]string{"issued": issued.Kubeconfig, "founding's": cl.Kubeconfig} {
		cfg, err := harness.KubeConfig([]byte(kubeconfig), "", dial, resolve)
		if err != nil {
			fatal(t, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs := kubernetes.NewForConfigOrDie(cfg)
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			cancel()
			fatalf(t, "%s kubeconfig: SelfSubjectReview: %v", what, err)
		}
		u := review.Status.UserInfo
		if u.Username != wantUser || !slices.Contains(u.Groups, clusterAdminsGroup) || slices.Contains(u.Groups, "system:masters") {
			errorf(t, "%s kubeconfig authenticates as %q in %v, want %q in %s only", what, u.Username, u.Groups, wantUser, clusterAdminsGroup)
		}
		if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
			errorf(t, "%s kubeconfig: listing kube-system's Secrets: %v", what, err)
		}
		cancel()
		t.Logf("%s kubeconfig: %s in %v", what, u.Username, u.Groups)
	}
	// The record names both, newest first, and the exec credential of the
	// step before (checkOperatorsThroughRBAC) between them.
	var list struct {
		Kubeconfigs []struct {
			IssuedBy string `json:"issued_by"`
		} `json:"kubeconfigs"`
	}
	if err := json.Unmarshal(apiCall(t, st, http.MethodGet, fmt.Sprintf("/clusters/%d/kubeconfigs", cl.ClusterID), "", http.StatusOK), &list); err != nil {
		fatal(t, err)
	}
	if len(list.Kubeconfigs) != 3 || "k8sapi:"+list.Kubeconfigs[0].IssuedBy != wantUser {
		errorf(t, "the record: %+v", list.Kubeconfigs)
	}
}

// apiCall is one operator call to the stack's API, failing the test on any
// other status than want.
func apiCall(t *testing.T, st stack, method, path, body string, want int) []byte {
	t.Helper()
	code, raw, err := apiAnswer(st, method, path, body)
	if err != nil {
		fatalf(t, "%s %s: %v", method, path, err)
	}
	if code != want {
		fatalf(t, "%s %s: %d %s, want %d", method, path, code, raw, want)
	}
	return raw
}

// apiAnswer makes one operator's request and returns the status and body
// (no test helpers: it may run in a probe's goroutine or an eventually).
func apiAnswer(st stack, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, st.env["API_URL"]+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+st.env["DEV_TOKEN"])
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}
