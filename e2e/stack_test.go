package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/e2e/harness"
)

// stack is the running local stack (cmd/k8sapi-local) as its stack.env says.
type stack struct {
	env map[string]string
}

func (s stack) get(t *testing.T, key string) string {
	t.Helper()
	v := s.env[key]
	if v == "" {
		fatalf(t, "stack.env has no %s", key)
	}
	return v
}

// repoRoot is the product module's folder (this module's parent).
func repoRoot() string { return filepath.Dir(e2eDir) }

// startStack builds and starts the product's local stack in the host
// namespace (it is the API and the platform simulator; the VMs reach it
// only through the shim, which runs on the host) and waits for stack.env.
// extraEnv is added to the stack's environment (the configuration its
// functions found clusters with: devstack passes the artifact settings).
func startStack(t *testing.T, r *harness.Run, extraEnv ...string) stack {
	t.Helper()
	start := time.Now()
	// E2E_STACK_BIN names a prebuilt stack binary (debugging the stack itself).
	exe := os.Getenv("E2E_STACK_BIN")
	if exe == "" {
		exe = filepath.Join(binDir, "k8sapi-local")
		build := exec.Command("go", "build", "-o", exe, "./cmd/k8sapi-local")
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			fatalf(t, "building cmd/k8sapi-local: %v\n%s", err, out)
		}
	}
	port, err := freePort()
	if err != nil {
		fatal(t, err)
	}
	// The stack keeps its state in the repository's .local/ and announces
	// itself in .local/stack.env; ours is the one naming our port.
	envFile := filepath.Join(repoRoot(), ".local", "stack.env")
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	// A database of the run's own: the developer's k8sapi_local keeps its
	// clusters, and whatever schema it is at never decides this proof.
	database := fmt.Sprintf("k8sapi_e2e_%d", time.Now().UnixNano())
	args := []string{"-port", strconv.Itoa(port), "-database", database}
	p, err := r.Start("stack", harness.Host{}, repoRoot(), append(os.Environ(), extraEnv...), append([]string{exe}, args...))
	if err != nil {
		fatal(t, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if done, err := p.Exited(); done {
			r.Suspect("stack")
			fatalf(t, "the local stack exited before it was ready: %v", err)
		}
		if env, err := readEnvFile(envFile); err == nil && env["API_URL"] == apiURL {
			resp, err := http.Get(env["API_URL"] + "/health")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Logf("local stack ready in %s: API %s, simulator %s", time.Since(start).Round(time.Millisecond), env["API_URL"], env["SIM_URL"])
					t.Cleanup(func() { dropDatabase(t, env["DATABASE_URL"], database) })
					return stack{env: env}
				}
			}
		}
		if time.Now().After(deadline) {
			r.Suspect("stack")
			fatal(t, "the local stack was not ready in 3 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dropDatabase drops the run's database once the test is over (its
// sessions with it: the stack is stopping anyway).
func dropDatabase(t *testing.T, dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		errorf(t, "dropping %s: %v", name, err)
		return
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		errorf(t, "dropping %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		errorf(t, "dropping %s: %v", name, err)
	}
}

// freePort returns a loopback port that was free a moment ago, so a
// developer's own `make local` (port 3000) keeps running beside the proof.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kvs, err := harness.ParseEnvFile(string(b))
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env, nil
}

// clusterResponse is the part of POST /clusters' 201 body the proof uses.
type clusterResponse struct {
	ClusterID           int64   `json:"cluster_id"`
	Name                string  `json:"name"`
	Kubeconfig          string  `json:"kubeconfig"`
	ControlPlaneVMIDs   []int64 `json:"control_plane_vm_ids"`
	ControlPlaneDNSName string  `json:"control_plane_dns_name"`
}

// foundCluster founds a cluster of count nodes; fields are extra members
// of the request body (`"cni":"flannel"`).
func foundCluster(t *testing.T, r *harness.Run, st stack, count int, fields ...string) clusterResponse {
	t.Helper()
	// Any failure here is the stack's: its log tail is the one to show.
	r.Suspect("stack")
	defer func() {
		if !t.Failed() {
			r.Unsuspect("stack")
		}
	}()
	body := fmt.Sprintf(`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":%d%s}`,
		count, strings.Join(append([]string{""}, fields...), ","))
	req, err := http.NewRequest(http.MethodPost, st.get(t, "API_URL")+"/clusters", strings.NewReader(body))
	if err != nil {
		fatal(t, err)
	}
	req.Header.Set("Authorization", "Bearer "+st.get(t, "DEV_TOKEN"))
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		fatalf(t, "POST /clusters: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		fatalf(t, "POST /clusters: %d %s", resp.StatusCode, raw)
	}
	var cl clusterResponse
	if err := json.Unmarshal(raw, &cl); err != nil {
		fatalf(t, "POST /clusters body: %v", err)
	}
	t.Cleanup(func() { deleteCluster(t, st, cl.ClusterID) })
	if len(cl.ControlPlaneVMIDs) != count || cl.Kubeconfig == "" || cl.ControlPlaneDNSName == "" {
		fatalf(t, "POST /clusters: want %d VMs, a kubeconfig and a DNS name; got %s", count, raw)
	}
	return cl
}

// bootstrap is the bootstrap part of GET /clusters/{id}.
type bootstrap struct {
	State string `json:"state"`
	Nodes []struct {
		VMID  int64  `json:"vm_id"`
		Phase string `json:"phase"`
		Steps []struct {
			Phase   string  `json:"phase"`
			Seconds float64 `json:"seconds"`
		} `json:"steps"`
	} `json:"nodes"`
}

// steps is each node's bootstrap as k8sapi timed it from the nodes'
// reports: how long each step took, one line per node.
func (b bootstrap) steps() string {
	var lines strings.Builder
	for _, n := range b.Nodes {
		fmt.Fprintf(&lines, "  VM %d:", n.VMID)
		for _, s := range n.Steps {
			fmt.Fprintf(&lines, " %s %.1f s;", s.Phase, s.Seconds)
		}
		lines.WriteString("\n")
	}
	return lines.String()
}

// clusterView is the part of GET /clusters/{id} the proofs read.
type clusterView struct {
	ControlPlaneVMIDs []int64 `json:"control_plane_vm_ids"`
	Nodes             []struct {
		VMID     int64  `json:"vm_id"`
		Name     string `json:"name"`
		IPv4     string `json:"ipv4"`
		Retiring bool   `json:"retiring"`
	} `json:"nodes"`
	RestoredFromSnapshotID *int64    `json:"restored_from_snapshot_id"`
	Bootstrap              bootstrap `json:"bootstrap"`
	// CARotation is the cluster's latest CA rotation (nodes_carotation_test.go).
	CARotation *caRotation `json:"ca_rotation"`
}

// getCluster reads the cluster as an operator does.
func getCluster(st stack, id int64) (clusterView, error) {
	var c clusterView
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/clusters/%d", st.env["API_URL"], id), nil)
	if err != nil {
		return c, err
	}
	req.Header.Set("Authorization", "Bearer "+st.env["DEV_TOKEN"])
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return c, fmt.Errorf("GET /clusters/%d: %w", id, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &c) != nil {
		return c, fmt.Errorf("GET /clusters/%d: %d %s", id, resp.StatusCode, raw)
	}
	return c, nil
}

// getBootstrap reads the cluster's bootstrap progress as an operator does.
func getBootstrap(st stack, id int64) (bootstrap, error) {
	c, err := getCluster(st, id)
	if err == nil && len(c.Bootstrap.Nodes) == 0 {
		err = fmt.Errorf("GET /clusters/%d: no node's bootstrap", id)
	}
	return c.Bootstrap, err
}

// checkBootstrapPhase: GET /clusters/{id} reports every node in phase
// (the cluster's bootstrap state being state), as k8sapi recorded it.
func checkBootstrapPhase(t *testing.T, st stack, id int64, state, phase string) {
	t.Helper()
	b, err := getBootstrap(st, id)
	if err != nil || b.State != state {
		fatalf(t, "%v; want bootstrap state %s, got %+v", err, state, b)
	}
	for _, n := range b.Nodes {
		if n.Phase != phase {
			errorf(t, "VM %d: bootstrap phase %s, want %s", n.VMID, n.Phase, phase)
		}
	}
}

// deleteCluster removes the founded cluster (its VMs free their addresses
// in a database that outlives the run).
func deleteCluster(t *testing.T, st stack, id int64) {
	req, err := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/clusters/%d", st.env["API_URL"], id), nil)
	if err != nil {
		errorOf(t, err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+st.env["DEV_TOKEN"])
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		errorf(t, "DELETE /clusters/%d: %v", id, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		errorf(t, "DELETE /clusters/%d: %d %s", id, resp.StatusCode, body)
		return
	}
	t.Logf("deleted cluster %d", id)
}

// vm is what the platform recorded for one control-plane VM.
type vm struct {
	id       int64
	addr     netip.Prefix
	userdata string
}

// loadVMs reads each VM's userdata and primary address from the dev
// platform tables (what computeapi would hand the hypervisor).
func loadVMs(t *testing.T, st stack, ids []int64) []vm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, st.get(t, "DATABASE_URL"))
	if err != nil {
		fatalf(t, "connecting to the stack's database: %v", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
SELECT v.id, v.userdata, i.ipv4, s.cidr_ipv4
FROM vms v
JOIN interfaces i ON i.vm_id = v.id AND i.is_primary
JOIN subnets s ON s.id = v.subnet_id
WHERE v.id = ANY($1) AND v.deleted_at IS NULL`, ids)
	if err != nil {
		fatalf(t, "reading VMs: %v", err)
	}
	var out []vm
	for rows.Next() {
		var v vm
		var ip, cidr string
		if err := rows.Scan(&v.id, &v.userdata, &ip, &cidr); err != nil {
			fatal(t, err)
		}
		subnet, err := netip.ParsePrefix(cidr)
		if err != nil {
			fatalf(t, "VM %d subnet %q: %v", v.id, cidr, err)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			fatalf(t, "VM %d address %q: %v", v.id, ip, err)
		}
		v.addr = netip.PrefixFrom(a, subnet.Bits())
		if strings.TrimSpace(v.userdata) == "" {
			fatalf(t, "VM %d has no userdata", v.id)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		fatal(t, err)
	}
	if len(out) != len(ids) {
		fatalf(t, "found %d of VMs %v in the platform tables", len(out), ids)
	}
	order := map[int64]int{}
	for i, id := range ids {
		order[id] = i
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i].id] < order[out[j].id] })
	return out
}

// runShim runs the VM's rendered userdata, unchanged, as cloud-init would,
// with the knobs the shim offers for this: the simulator's IMDS for that VM,
// the node's root folder, and no host setup (no packages, no systemd).
func runShim(t *testing.T, r *harness.Run, st stack, nd *node, userdata string) {
	t.Helper()
	if err := os.MkdirAll(nd.root, 0o755); err != nil {
		fatal(t, err)
	}
	script := filepath.Join(r.WorkDir, fmt.Sprintf("userdata-%d.sh", nd.vmID))
	if err := os.WriteFile(script, []byte(userdata), 0o700); err != nil {
		fatal(t, err)
	}
	logPath := filepath.Join(r.LogDir, fmt.Sprintf("n%d_userdata.log", nd.n))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(),
		"EXC_IMDS_BASE_URL="+st.get(t, "SIM_URL")+fmt.Sprintf("/imds/%d", nd.vmID),
		"EXK8S_ROOT="+nd.root,
		"EXK8S_SKIP_HOST_SETUP=1",
	)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(logPath, out, 0o644)
	if err != nil {
		r.Suspect("stack")
		fatalf(t, "node %d (VM %d): userdata shim failed: %v\n%s", nd.n, nd.vmID, err, harness.TailFile(logPath, 30))
	}
}
