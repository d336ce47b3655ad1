package e2e

// The worker-pool step of the node proof (issue 25): a pool of two
// workers created through the API joins the cluster as itself, runs a
// workload, and is scaled down and deleted with its workers drained.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// poolLabel is the label the product puts on every worker's Node
// (bundle.WorkerPoolLabel).
const poolLabel = "k8sapi.excloud.in/node-pool"

// poolBody is the proof's pool: the founding's instance type and image.
const poolBody = `{"name":"proof","count":2,"instance_type":"e2.medium","image_id":1,` +
	`"labels":{"tier":"proof"},"taints":[{"key":"dedicated","value":"proof","effect":"NoSchedule"}]}`

// poolWorker is one worker of the pool: its VM, Node name and machine.
type poolWorker struct {
	v    vm
	name string
	m    *harness.Machine
}

// poolView is the part of the API's pool the step reads.
type poolView struct {
	State string `json:"state"`
	Nodes []struct {
		VMID     int64  `json:"vm_id"`
		Ordinal  int    `json:"ordinal"`
		Name     string `json:"name"`
		IPv4     string `json:"ipv4"`
		Retiring bool   `json:"retiring"`
	} `json:"nodes"`
}

// checkPool creates the pool, proves its workers, runs pool-web on them,
// scales the pool to one and deletes it, and says what held.
func (p *provenCluster) checkPool(t *testing.T) []string {
	t.Helper()
	start := time.Now()
	workers := p.startPool(t)
	readyIn := time.Since(start)
	noSnapshot := p.checkWorkerGetsNoSnapshotURL(t, workers[0].v)
	p.checkWorkerKeys(t, workers)
	p.eventuallyTainted(t, true)
	ran := p.checkPoolWeb(t)
	workers, remediated := p.checkWorkerRemediation(t, workers)
	held := []string{"2/2 workers Ready", ran, noSnapshot, remediated}
	if rotated := p.rotateCAsWithWorkers(t, workers); rotated != "" {
		held = append(held, rotated)
	}
	workers, upgraded := p.checkUpgrade(t, workers)
	if upgraded != "" {
		held = append(held, upgraded)
	}
	scaleDown, deleted := p.endPool(t, workers)
	t.Logf("the pool step took %.0f s: workers Ready %.0f s after the POST, scale down %.0f s, delete %.0f s",
		time.Since(start).Seconds(), readyIn.Seconds(), scaleDown.Seconds(), deleted.Seconds())
	return held
}

// startPool creates the pool of two workers and boots them, and answers
// them once their Nodes are Ready.
func (p *provenCluster) startPool(t *testing.T) []poolWorker {
	t.Helper()
	p.poolCall(t, http.MethodPost, "", poolBody)
	workers := p.poolWorkers(t, 2)
	p.checkWorkerBundle(t, workers[0].v)
	p.bootWorkers(t, workers)
	p.checkWorkersReady(t, workers)
	return workers
}

// endPool scales the pool to one worker and deletes it, each worker
// drained as it goes, and answers how long each took.
func (p *provenCluster) endPool(t *testing.T, workers []poolWorker) (scaleDown, deleted time.Duration) {
	t.Helper()
	start := time.Now()
	left := p.checkScaleDown(t, workers)
	scaleDown = time.Since(start)
	p.checkPoolDelete(t, left)
	return scaleDown, time.Since(start) - scaleDown
}

// poolPath is the proof pool's route, or the pools' when name is empty.
func (p *provenCluster) poolPath(name string) string {
	path := fmt.Sprintf("/clusters/%d/node-pools", p.cl.ClusterID)
	if name != "" {
		path += "/" + name
	}
	return path
}

// poolCall calls the pool's route (POST goes to the pools' route) and
// accepts any 2xx: the API answers 201/200 when done, 202 when pending.
func (p *provenCluster) poolCall(t *testing.T, method, name, body string) []byte {
	t.Helper()
	path := p.poolPath("proof")
	if method == http.MethodPost {
		path = p.poolPath("")
	}
	code, raw := p.poolRequest(t, method, path, body)
	if code/100 != 2 {
		fatalf(t, "%s %s: %d %s", method, path, code, raw)
	}
	return raw
}

// poolRequest is one operator call with its status, whatever it is.
func (p *provenCluster) poolRequest(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, p.st.get(t, "API_URL")+path, strings.NewReader(body))
	if err != nil {
		fatal(t, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.st.get(t, "DEV_TOKEN"))
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		fatalf(t, "%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// getPool reads the proof pool; found is false on 404.
func (p *provenCluster) getPool(t *testing.T) (poolView, bool, error) {
	code, raw := p.poolRequest(t, http.MethodGet, p.poolPath("proof"), "")
	var v poolView
	switch {
	case code == http.StatusNotFound:
		return v, false, nil
	case code != http.StatusOK:
		return v, false, fmt.Errorf("GET pool: %d %s", code, raw)
	}
	decode(t, raw, &v)
	return v, true, nil
}

// poolWorkers waits until the reconciler made n workers' VMs with their
// addresses, and reads them from the platform's tables.
func (p *provenCluster) poolWorkers(t *testing.T, n int) []poolWorker {
	t.Helper()
	var ids []int64
	names := map[int64]string{}
	eventually(t, p.r, fmt.Sprintf("%d workers' VMs and addresses", n), []string{"stack"}, 5*time.Minute, func(context.Context) (string, error) {
		v, _, err := p.getPool(t)
		ids = ids[:0]
		for _, w := range v.Nodes {
			if w.VMID != 0 && w.IPv4 != "" {
				ids = append(ids, w.VMID)
				names[w.VMID] = w.Name
			}
		}
		if err != nil || len(ids) != n {
			return "", fmt.Errorf("pool %+v (%v)", v, err)
		}
		return fmt.Sprintf("VMs %v", ids), nil
	})
	var out []poolWorker
	for _, v := range loadVMs(t, p.st, ids) {
		out = append(out, poolWorker{v: v, name: names[v.id]})
	}
	return out
}

// bootWorkers joins each VM to the node network and boots it (machine
// names continue nN) and waits for its userdata to finish.
func (p *provenCluster) bootWorkers(t *testing.T, workers []poolWorker) {
	t.Helper()
	writePlatformHosts(t, p.st, p.svc.resolverHosts)
	kept := &machineCluster{r: p.r}
	for i, w := range workers {
		node, err := p.network.AddNode(w.v.addr)
		if err != nil {
			fatal(t, err)
		}
		name := fmt.Sprintf("n%d", len(p.network.Nodes))
		workers[i].m = bootVM(t, p.r, p.image, node.NS, name, w.v, p.svc)
		kept.machines = append(kept.machines, workers[i].m)
	}
	t.Cleanup(kept.saveJournals)
	t.Cleanup(func() { p.c.saveClusterView(t) })
	for _, w := range workers {
		p.c.waitMachineUserdata(t, w.m)
	}
}

// bundleRule is one thing a worker's bundle must never hold, judged per
// file: a worker gets the CA's certificate and its proofs, never a
// credential, and runs no control-plane component.
type bundleRule struct {
	what  string
	holds func(path, content string) bool
}

var (
	pemPrivateKey  = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	kubeconfigCred = regexp.MustCompile(`(?m)^\s*(client-key-data|token):\s*\S`)
)

var bundleRules = []bundleRule{
	{"a private key", func(_, c string) bool { return pemPrivateKey.MatchString(c) }},
	{"a kubeconfig with client credentials", func(_, c string) bool { return kubeconfigCred.MatchString(c) }},
	{"the system:masters group", func(_, c string) bool { return strings.Contains(c, "system:masters") }},
	{"a key file", func(p, _ string) bool { return strings.HasSuffix(p, ".key") || strings.HasSuffix(p, "-key.pem") }},
	{"a static pod manifest", func(p, _ string) bool { return strings.HasPrefix(p, "/etc/kubernetes/manifests/") }},
}

// checkWorkerBundle fetches v's worker bundle with its IMDS proofs, as
// its shim does, and checks every file against bundleRules. Before the
// VM boots: a bundle fetch is repeatable in its window (only the
// certificates' signing is once per window) and takes one of its 20
// fetches per 10 minutes, so the worker's own fetch still succeeds.
func (p *provenCluster) checkWorkerBundle(t *testing.T, v vm) {
	t.Helper()
	var b struct {
		Files map[string]string `json:"files"`
	}
	decode(t, []byte(readOK(t, p.asVM(t, v, http.MethodGet, fmt.Sprintf("/bootstrap/worker/%d", v.id)))), &b)
	if len(b.Files) == 0 {
		fatalf(t, "VM %d's worker bundle has no files", v.id)
	}
	for path, content := range b.Files {
		for _, r := range bundleRules {
			if r.holds(path, content) {
				errorf(t, "VM %d's worker bundle holds %s: %s", v.id, r.what, path)
			}
		}
	}
}

// checkWorkerGetsNoSnapshotURL: a worker's own proofs on the control
// plane's etcd-snapshot route get no upload URL (204: nothing for this VM
// to take; the choice and the lookup name only control-plane nodes, issue
// 43: etcd belongs to the control plane).
func (p *provenCluster) checkWorkerGetsNoSnapshotURL(t *testing.T, v vm) string {
	t.Helper()
	req := p.asVM(t, v, http.MethodGet, fmt.Sprintf("/bootstrap/control-plane/%d/etcd-snapshot", v.id))
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		fatal(t, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	refused := resp.StatusCode == http.StatusNoContent || resp.StatusCode >= 400 && resp.StatusCode < 500
	if !refused || strings.Contains(string(raw), "upload_url") {
		fatalf(t, "a worker's proofs on %s: %d %s (want 204 or a 4xx, and no upload URL)", req.URL.Path, resp.StatusCode, raw)
	}
	return fmt.Sprintf("a worker's etcd-snapshot request got no URL (%d)", resp.StatusCode)
}

// asVM is a request to k8sapi with VM v's proofs (a fresh IMDS session
// and its access token), as its shim and scripts make them.
func (p *provenCluster) asVM(t *testing.T, v vm, method, path string) *http.Request {
	t.Helper()
	session := p.imdsGet(t, v, "token", "")
	var access struct {
		Token string `json:"access_token"`
	}
	decode(t, []byte(p.imdsGet(t, v, "latest/identity/access-token", session)), &access)
	req, err := http.NewRequest(method, p.st.get(t, "API_URL")+path, nil)
	if err != nil {
		fatal(t, err)
	}
	req.Header.Set("X-exc-imds-token", session)
	req.Header.Set("Authorization", "Bearer "+access.Token)
	return req
}

// imdsGet is one call to the simulator's IMDS for VM v.
func (p *provenCluster) imdsGet(t *testing.T, v vm, path, session string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/imds/%d/%s", p.st.get(t, "SIM_URL"), v.id, path), nil)
	if err != nil {
		fatal(t, err)
	}
	if session != "" {
		req.Header.Set("X-exc-imds-token", session)
	}
	return strings.TrimSpace(readOK(t, req))
}

// readOK does req and returns its body, failing on anything but 200.
func readOK(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		fatal(t, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fatalf(t, "%s %s: %d %s", req.Method, req.URL, resp.StatusCode, raw)
	}
	return string(raw)
}

// checkWorkersReady: every worker's Node is Ready with the pool's label,
// its labels and its taint.
func (p *provenCluster) checkWorkersReady(t *testing.T, workers []poolWorker) {
	t.Helper()
	eventually(t, p.r, fmt.Sprintf("%d workers Ready with the pool's labels and taint", len(workers)), p.c.consoles(), 10*time.Minute,
		func(ctx context.Context) (string, error) { return p.c.poolNodesReady(ctx, len(workers)) })
}

// poolNode is the part of a Node the pool checks read.
type poolNode struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Taints []struct{ Key, Value, Effect string } `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct{ Type, Status string } `json:"conditions"`
	} `json:"status"`
}

// poolNodes lists the Nodes the selector picks.
func (c *machineCluster) poolNodes(ctx context.Context, selector string) ([]poolNode, error) {
	var l struct{ Items []poolNode }
	err := c.kubectlJSON(ctx, &l, "get", "nodes", "-l", selector, "-o", "json")
	return l.Items, err
}

// poolNodesReady: n Nodes of the pool, each Ready, labelled and tainted.
func (c *machineCluster) poolNodesReady(ctx context.Context, n int) (string, error) {
	nodes, err := c.poolNodes(ctx, poolLabel+"=proof")
	if err != nil || len(nodes) != n {
		return "", fmt.Errorf("%d pool Nodes (%v)", len(nodes), err)
	}
	for _, nd := range nodes {
		if !nodeReady(nd) || nd.Metadata.Labels["tier"] != "proof" || !hasTaint(nd, "dedicated", "proof", "NoSchedule") {
			return "", fmt.Errorf("%s: ready %v, labels %v, taints %v", nd.Metadata.Name, nodeReady(nd), nd.Metadata.Labels, nd.Spec.Taints)
		}
	}
	return fmt.Sprintf("%d workers Ready", n), nil
}

func nodeReady(n poolNode) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func hasTaint(n poolNode, key, value, effect string) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == key && tn.Value == value && tn.Effect == effect {
			return true
		}
	}
	return false
}

// checkWorkerKeys: every private key on a worker's disk was born on it
// (it is in the overlay's upper folder: the image holds none), is
// owner-only and matches the certificate beside it.
func (p *provenCluster) checkWorkerKeys(t *testing.T, workers []poolWorker) {
	t.Helper()
	for _, w := range workers {
		keys := privateKeys(t, w.m.Upper())
		if len(keys) == 0 {
			errorf(t, "%s: no private key in its upper folder", w.m.Name)
		}
		for _, k := range keys {
			checkKeyFile(t, w.m.Name, k)
		}
	}
}

// privateKeys is every file under root that holds a PEM private key
// (containerd's snapshots are images' files, not the node's).
func privateKeys(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if raw, err := os.ReadFile(path); err == nil && strings.Contains(string(raw), "PRIVATE KEY-----") && !strings.Contains(path, "containerd") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		fatal(t, err)
	}
	return out
}

// checkKeyFile: the key is 0600 and pairs with a certificate: in the same
// file (the kubelet's rotated pem) or the .crt/.pem beside it.
func checkKeyFile(t *testing.T, machine, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		errorf(t, "%s: %s is not owner-only: %v %v", machine, path, st.Mode(), err)
		return
	}
	key, _ := os.ReadFile(path)
	for _, cert := range certCandidates(path) {
		raw, err := os.ReadFile(cert)
		if err != nil || !strings.Contains(string(raw), "CERTIFICATE") {
			continue
		}
		if _, err := tls.X509KeyPair(raw, key); err != nil {
			errorf(t, "%s: %s does not match %s: %v", machine, path, cert, err)
		}
		return
	}
	errorf(t, "%s: %s has no certificate beside it", machine, path)
}

// certCandidates are where a key's certificate lives, the key's own file first.
func certCandidates(key string) []string {
	base := strings.TrimSuffix(strings.TrimSuffix(key, ".key"), "-key.pem")
	return []string{key, base + ".crt", base + ".pem", strings.TrimSuffix(key, ".key") + ".pem"}
}

// eventuallyTainted waits until every control-plane Node has (or, once
// no worker is left, no longer has) the control-plane NoSchedule taint.
// The control-plane Nodes are every Node but the pools': a replacement's
// has no role label (only the founding's initial node labels), and its
// taint is its own taint unit's work as much as the others'.
func (p *provenCluster) eventuallyTainted(t *testing.T, want bool) {
	t.Helper()
	eventually(t, p.r, fmt.Sprintf("control-plane Nodes tainted %v", want), nil, 2*time.Minute, func(ctx context.Context) (string, error) {
		nodes, err := p.c.poolNodes(ctx, "!"+poolLabel)
		if err != nil || len(nodes) != len(p.c.machines) {
			return "", fmt.Errorf("%d control-plane Nodes, want %d (%v)", len(nodes), len(p.c.machines), err)
		}
		for _, n := range nodes {
			if hasTaint(n, "node-role.kubernetes.io/control-plane", "", "NoSchedule") != want {
				return "", fmt.Errorf("%s: taints %v", n.Metadata.Name, n.Spec.Taints)
			}
		}
		return fmt.Sprintf("%d control-plane Nodes", len(nodes)), nil
	})
}

// poolWebManifest is pool-web: two probe replicas on the pool's workers
// (its label, its taint tolerated), spread hard over hostnames, behind a
// Service. The hard spread holds while both workers live; after the scale
// down only one worker's hostname is an eligible domain (the nodeSelector
// leaves out the control plane), so the spread no longer blocks and both
// replicas run there: the step expects 2 available replicas after it, not
// one Pending. nodeTaintsPolicy Honor leaves the draining worker (cordoned:
// tainted unschedulable) out of the domains at once. Without it the
// evicted replica was refused while that Node lived, and the scheduler
// tried it again only at its 5-minute retry of unschedulable pods, not
// when the Node was deleted (seen on machines: 3.6 and over 5 minutes).
// The preStop sleep is what a workload does for a lossless drain: an
// evicted replica goes on answering while its endpoint leaves every
// node's kube-proxy rules (without it, the rolling upgrade's workload
// probe met 2 refused connections through the Service as a worker was
// retired).
func poolWebManifest() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: pool-web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: pool-web}
  template:
    metadata:
      labels: {app: pool-web}
    spec:
      nodeSelector: {tier: proof}
      tolerations: [{key: dedicated, operator: Equal, value: proof, effect: NoSchedule}]
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        nodeTaintsPolicy: Honor
        labelSelector:
          matchLabels: {app: pool-web}
      containers:
      - name: probe
        image: %s/e2e/probe:1
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080}]
        lifecycle:
          preStop: {exec: {command: [sleep, "5"]}}
---
apiVersion: v1
kind: Service
metadata:
  name: pool-web
  namespace: default
spec:
  selector: {app: pool-web}
  ports: [{port: 8080, targetPort: 8080}]
`, svcAddr(registryPort))
}

// cniRoutesJoiners: the cni values under which every node routes to the
// pods of a node that joined after it (docs/NODE-POOLS.md).
var cniRoutesJoiners = map[string]bool{"flannel": true, "cilium": true}

// checkPoolWeb deploys pool-web, waits for a replica on each worker and
// reaches the Service from the probe pod on the initial node where the
// proof's CNI routes the workers.
func (p *provenCluster) checkPoolWeb(t *testing.T) string {
	t.Helper()
	c := p.c
	if err := c.writeInMachine(0, "/root/pool-web.yaml", []byte(poolWebManifest())); err != nil {
		fatal(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := c.kubectl(ctx, "apply", "-f", "/root/pool-web.yaml"); err != nil {
		fatalf(t, "applying pool-web: %v %s", err, out)
	}
	eventually(t, p.r, "pool-web: one replica on each worker", c.consoles(), 5*time.Minute,
		func(ctx context.Context) (string, error) { return c.poolWebOn(ctx, 2) })
	if !cniRoutesJoiners[proofCNI] {
		// Under bridge the control-plane nodes were rendered before the
		// workers existed and have no route to their pod subnets
		// (docs/NODE-POOLS.md): the reach is proven once the proof
		// founds with a CNI that routes a node joining later.
		t.Logf("pool-web's Service not reached from the control plane: the proof's %s CNI does not route nodes that join later", proofCNI)
		return "pool-web ran on a worker"
	}
	from := c.initialProbePod(t)
	eventually(t, p.r, "pool-web's Service reached from "+from.name+" on "+from.node, nil, 2*time.Minute,
		func(ctx context.Context) (string, error) {
			out, err := c.kubectl(ctx, "exec", from.name, "--", "curl", "-s", "--max-time", "2", "http://pool-web:8080/")
			if err != nil || !strings.Contains(string(out), "probe pool-web-") {
				return "", fmt.Errorf("%q (%v)", out, err)
			}
			return strings.TrimSpace(string(out)), nil
		})
	return "pool-web ran on a worker"
}

// initialProbePod is the probe pod Ready on the initial node (the probe
// DaemonSet runs on the workers too, so c.probePods' count no longer holds).
func (c *machineCluster) initialProbePod(t *testing.T) probePod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var l kubeList
	if err := c.kubectlJSON(ctx, &l, "get", "pods", "-l", "app=probe"); err != nil {
		fatal(t, err)
	}
	for i, p := range l.Items {
		if condition(i, l, "Ready") == "True" && c.isInitialNode(ctx, p.Spec.NodeName) {
			return probePod{p.Metadata.Name, p.Spec.NodeName, p.Status.PodIP}
		}
	}
	fatalf(t, "no Ready probe pod on the initial node")
	return probePod{}
}

// poolWebOn: pool-web has two Running Ready replicas, on n distinct
// workers of the pool.
func (c *machineCluster) poolWebOn(ctx context.Context, n int) (string, error) {
	workers, err := c.poolNodes(ctx, poolLabel+"=proof")
	if err != nil {
		return "", err
	}
	var l kubeList
	if err := c.kubectlJSON(ctx, &l, "get", "pods", "-l", "app=pool-web", "-o", "json"); err != nil {
		return "", err
	}
	on := map[string]bool{}
	for i, pod := range l.Items {
		if pod.Status.Phase != "Running" || condition(i, l, "Ready") != "True" || !namesNode(workers, pod.Spec.NodeName) {
			return "", fmt.Errorf("%s on %q: %s", pod.Metadata.Name, pod.Spec.NodeName, pod.Status.Phase)
		}
		on[pod.Spec.NodeName] = true
	}
	if len(l.Items) != 2 || len(on) != n {
		return "", fmt.Errorf("%d pods on %d workers", len(l.Items), len(on))
	}
	return fmt.Sprintf("2 replicas on %d workers", n), nil
}

func namesNode(nodes []poolNode, name string) bool {
	for _, n := range nodes {
		if n.Metadata.Name == name {
			return true
		}
	}
	return false
}

// checkScaleDown scales the pool to one: the reconciler deletes the
// highest ordinal's VM, whose machine then powers off (its drain runs),
// its Node goes and pool-web runs on the remaining worker, returned.
func (p *provenCluster) checkScaleDown(t *testing.T, workers []poolWorker) poolWorker {
	t.Helper()
	gone := p.highestOrdinal(t, workers)
	p.poolCall(t, http.MethodPatch, "proof", `{"count":1}`)
	p.retireWorker(t, gone)
	// A deadline, not a target: before pool-web honoured the cordon's
	// taint in its spread, its evicted replica waited for the scheduler's
	// 5-minute retry (docs/NODE-POOLS.md); now it runs during the drain.
	eventually(t, p.r, "pool-web available on the remaining worker", p.c.consoles(), 8*time.Minute,
		func(ctx context.Context) (string, error) { return p.c.poolWebOn(ctx, 1) })
	if workers[0].v.id == gone.v.id {
		return workers[1]
	}
	return workers[0]
}

// highestOrdinal is the worker a scale to one removes.
func (p *provenCluster) highestOrdinal(t *testing.T, workers []poolWorker) poolWorker {
	t.Helper()
	v, _, err := p.getPool(t)
	if err != nil {
		fatal(t, err)
	}
	best := -1
	var id int64
	for _, n := range v.Nodes {
		if n.Ordinal > best {
			best, id = n.Ordinal, n.VMID
		}
	}
	for _, w := range workers {
		if w.v.id == id {
			return w
		}
	}
	fatalf(t, "no worker has VM %d (pool %+v)", id, v)
	return poolWorker{}
}

// retireWorker waits for the reconciler to delete w's VM, powers its
// machine off as the platform would (gracefully, so its drain runs),
// and checks its Node is gone and the drain did not wait its timeout.
func (p *provenCluster) retireWorker(t *testing.T, w poolWorker) {
	t.Helper()
	p.awaitVMDeleted(t, w.v)
	t.Logf("powering %s (VM %d) off: %s", w.m.Name, w.v.id, w.m.Stop(harness.PowerOffGrace).Round(time.Millisecond))
	p.checkDrain(t, w.m)
	eventually(t, p.r, w.m.Name+"'s Node gone", nil, 2*time.Minute, func(ctx context.Context) (string, error) {
		nodes, err := p.c.poolNodes(ctx, poolLabel+"=proof")
		for _, n := range nodes {
			if n.Metadata.Name == w.name {
				return "", fmt.Errorf("%s still listed", n.Metadata.Name)
			}
		}
		return fmt.Sprintf("%d pool Nodes left", len(nodes)), err
	})
}

// awaitVMDeleted waits for the reconciler to delete v.
func (p *provenCluster) awaitVMDeleted(t *testing.T, v vm) {
	t.Helper()
	eventually(t, p.r, fmt.Sprintf("VM %d deleted by the reconciler", v.id), []string{"stack"}, 5*time.Minute,
		func(ctx context.Context) (string, error) {
			if deleted, err := vmDeleted(ctx, t, p.st, v.id); err != nil || !deleted {
				return "", fmt.Errorf("not yet (%v)", err)
			}
			return "deleted", nil
		})
}

// checkDrain reads the stopped machine's drain from its journal (kept in
// its overlay): it must have evicted every pod (not given up at its
// timeout: a worker's pods gone, a control-plane node's evictions
// granted) and deleted its Node. It logs how long the drain took.
func (p *provenCluster) checkDrain(t *testing.T, m *harness.Machine) {
	t.Helper()
	lines := drainJournal(t, m)
	evicted := strings.Contains(lines, "every pod left") || strings.Contains(lines, "is evicted")
	if !evicted || !strings.Contains(lines, "deleted Node") {
		errorf(t, "%s: its drain did not evict every pod and delete its Node:\n%s", m.Name, lines)
	}
	t.Logf("%s: drain took %s (cordon to Node deleted)", m.Name, drainSpan(lines))
}

// checkDrainBound: the stopped machine's drain said it waits under the
// bound want names (its journal's "draining ... for at most" line).
func (p *provenCluster) checkDrainBound(t *testing.T, m *harness.Machine, want string) {
	t.Helper()
	if lines := drainJournal(t, m); !strings.Contains(lines, want) {
		errorf(t, "%s: its drain's bound is not %q:\n%s", m.Name, want, lines)
	}
}

// drainJournal is the stopped machine's drain unit's journal (kept in its
// overlay), with unix timestamps.
func drainJournal(t *testing.T, m *harness.Machine) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "journalctl", "-D", filepath.Join(m.Upper(), "var/log/journal"),
		"-u", "exk8s-drain.service", "--no-pager", "-o", "short-unix").CombinedOutput()
	if err != nil {
		fatalf(t, "%s: reading its drain's journal: %v %s", m.Name, err, out)
	}
	return string(out)
}

// drainSpan is the time from the drain's "cordoning" line to its
// "deleted Node" line, from journalctl's unix timestamps.
func drainSpan(lines string) string {
	var from, to float64
	for _, l := range strings.Split(lines, "\n") {
		var at float64
		if _, err := fmt.Sscan(l, &at); err != nil {
			continue
		}
		switch {
		case strings.Contains(l, "cordoning "):
			from = at
		case strings.Contains(l, "deleted Node "):
			to = at
		}
	}
	if from == 0 || to == 0 {
		return "unknown (no cordon or no delete line)"
	}
	return fmt.Sprintf("%.1f s", to-from)
}

// checkPoolDelete deletes the pool: the last worker's VM goes, its
// machine powers off and drains, the pool is 404 once settled and the
// control-plane Nodes are no longer tainted.
func (p *provenCluster) checkPoolDelete(t *testing.T, last poolWorker) {
	t.Helper()
	p.poolCall(t, http.MethodDelete, "proof", "")
	p.retireWorker(t, last)
	eventually(t, p.r, "GET the pool answers 404", []string{"stack"}, 5*time.Minute, func(context.Context) (string, error) {
		v, found, err := p.getPool(t)
		if err != nil || found {
			return "", fmt.Errorf("pool %+v (%v)", v, err)
		}
		return "404", nil
	})
	p.eventuallyTainted(t, false)
}
