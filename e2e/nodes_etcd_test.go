package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The etcd lifecycle on booted nodes (issue 26): a snapshot the chosen
// node takes and uploads, a control-plane machine stopped for good and
// replaced through the API while writes keep succeeding, and the snapshot
// restored into a new cluster that holds what was written before it.

// markerName is the ConfigMap written before the snapshot; the restored
// cluster must hold it.
const markerName = "etcd-lifecycle-marker"

// replacedIndex is the machine the proof stops for good and replaces: not
// the initial node, whose admin identity the proof's kubectl uses.
const replacedIndex = 1

// checkEtcdLifecycle takes a snapshot, replaces a control-plane node and
// restores the snapshot into a new cluster, and says what held.
func (p *provenCluster) checkEtcdLifecycle(t *testing.T) []string {
	t.Helper()
	start := time.Now()
	snapshot, marker := p.checkSnapshot(t)
	snapped := time.Now()
	replaced := p.checkReplace(t, replacedIndex)
	replacedAt := time.Now()
	restored := p.checkRestore(t, snapshot, marker)
	t.Logf("the etcd lifecycle took %.0f s: snapshot %.0f s, replacement %.0f s, restore %.0f s", time.Since(start).Seconds(),
		snapped.Sub(start).Seconds(), replacedAt.Sub(snapped).Seconds(), time.Since(replacedAt).Seconds())
	return []string{"etcd snapshot uploaded and listed", replaced, restored}
}

// etcdSnapshot is a snapshot as the API answers it.
type etcdSnapshot struct {
	ID          int64      `json:"id"`
	RequestedBy string     `json:"requested_by"`
	NodeVMID    int64      `json:"node_vm_id"`
	State       string     `json:"state"`
	SizeBytes   *int64     `json:"size_bytes"`
	SHA256      *string    `json:"sha256"`
	Failure     *string    `json:"failure"`
	FinishedAt  *time.Time `json:"finished_at"`
}

// checkSnapshot writes the marker, asks for a snapshot through the API,
// has the node k8sapi chose take it now (its snapshot unit, which the
// node's timer starts every 5 minutes) and finds it uploaded in the list.
// A snapshot the schedule asked for first (a cluster's first is due once a
// node is Ready) is taken the same way before: only one may be pending.
// It returns the snapshot's id and the marker's value.
func (p *provenCluster) checkSnapshot(t *testing.T) (int64, string) {
	t.Helper()
	for _, s := range p.snapshots(t) {
		if s.State == "pending" {
			t.Logf("snapshot %d, asked by %s, is pending: taking it first", s.ID, s.RequestedBy)
			p.takeSnapshot(t, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	marker := "written before snapshot, run " + p.r.ID
	if out, err := p.c.kubectl(ctx, "create", "configmap", markerName, "--from-literal=marker="+marker); err != nil {
		fatalf(t, "writing the marker: %v %s", err, out)
	}
	var asked etcdSnapshot
	decode(t, apiCall(t, p.st, http.MethodPost, fmt.Sprintf("/clusters/%d/etcd-snapshots", p.cl.ClusterID), "", http.StatusAccepted), &asked)
	p.takeSnapshot(t, asked)
	return asked.ID, marker
}

// takeSnapshot runs the snapshot unit on the node k8sapi chose for s and
// waits until the list shows s uploaded.
func (p *provenCluster) takeSnapshot(t *testing.T, s etcdSnapshot) {
	t.Helper()
	c := p.c
	i := slices.IndexFunc(c.vms, func(v vm) bool { return v.id == s.NodeVMID })
	if i < 0 {
		fatalf(t, "snapshot %d: k8sapi chose VM %d, not one of the cluster's", s.ID, s.NodeVMID)
	}
	m := c.machines[i]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := m.Exec(ctx, "systemctl", "start", "exk8s-etcd-snapshot.service"); err != nil {
		fatalf(t, "%s: the snapshot unit failed: %v %s\n%s", m.Name, err, out, c.journalTail(ctx, m, "exk8s-etcd-snapshot", 30))
	}
	var got etcdSnapshot
	eventually(t, c.r, fmt.Sprintf("snapshot %d uploaded, as GET /clusters/%d/etcd-snapshots lists it", s.ID, p.cl.ClusterID), nil, time.Minute,
		func(context.Context) (string, error) {
			var err error
			got, err = p.listedSnapshot(t, s.ID)
			return fmt.Sprintf("%s by %s on VM %d", got.State, got.RequestedBy, got.NodeVMID), err
		})
	t.Logf("snapshot %d: %d bytes, sha256 %s, finished %s", got.ID, *got.SizeBytes, *got.SHA256, got.FinishedAt.Format(time.TimeOnly))
}

// snapshots is the cluster's snapshots as GET /clusters/{id}/etcd-snapshots
// lists them.
func (p *provenCluster) snapshots(t *testing.T) []etcdSnapshot {
	t.Helper()
	var list struct {
		Snapshots []etcdSnapshot `json:"snapshots"`
	}
	decode(t, apiCall(t, p.st, http.MethodGet, fmt.Sprintf("/clusters/%d/etcd-snapshots", p.cl.ClusterID), "", http.StatusOK), &list)
	return list.Snapshots
}

// listedSnapshot is snapshot id as the list shows it, once it is
// uploaded with a size and a SHA-256; a failed one fails the proof.
func (p *provenCluster) listedSnapshot(t *testing.T, id int64) (etcdSnapshot, error) {
	list := p.snapshots(t)
	i := slices.IndexFunc(list, func(s etcdSnapshot) bool { return s.ID == id })
	if i < 0 {
		return etcdSnapshot{}, fmt.Errorf("snapshot %d not listed", id)
	}
	s := list[i]
	switch {
	case s.State == "failed":
		fatalf(t, "snapshot %d failed: %s", id, deref(s.Failure))
	case s.State != "uploaded" || s.SizeBytes == nil || *s.SizeBytes <= 0 || s.SHA256 == nil || len(*s.SHA256) != 64 || s.FinishedAt == nil:
		return s, fmt.Errorf("snapshot %d: %+v", id, s)
	}
	return s, nil
}

// replacement is a control-plane node's replacement: the node replaced
// and the one replacing it.
type replacement struct {
	OldNodeName string `json:"old_node_name"`
	NewNodeName string `json:"new_node_name"`
}

// checkReplace crashes machine i and tells k8sapi nothing: with
// remediation turned on the reconciler judges the silent node and
// replaces it (nodes_remediation_test.go), by the path an operator's
// POST .../replace takes; a second replacement meanwhile is refused (409).
// Until the replacement is done a writer creates a ConfigMap through the
// initial node every second (each write needs etcd's quorum) and none may
// fail. The new VM boots as a new machine on the node network; its member
// is promoted, every member is healthy, its Node is Ready, and k8sapi
// deletes the old VM; then the old node's etcd client certificate is
// refused by every member (nodes_etcdcrl_test.go).
func (p *provenCluster) checkReplace(t *testing.T, i int) string {
	t.Helper()
	c, old, oldNS := p.c, p.c.vms[i], p.c.machines[i].NS
	c.logEtcdStatus(t)
	retired := c.keepEtcdClient(t, i)
	c.checkEtcdClientAnswered(t, retired, (i+1)%len(c.vms))
	w := c.startWriter("replace-write")
	t.Cleanup(func() { w.finish() })
	api := p.startAPIProbe(t)
	t.Cleanup(func() { api.finish() })
	before := p.nodeNames(t)
	crashed := p.crash(t, c.machines[i], old)
	decided := p.remediated(t, "control-plane node", old.id, crashed, `"unhealthy_after":"`+proofUnhealthyAfter+`"`)
	rep := p.remediationOf(t, old.id, before)
	other := c.vms[(i+1)%len(c.vms)].id
	apiCall(t, p.st, http.MethodPost, fmt.Sprintf("/clusters/%d/nodes/%d/replace", p.cl.ClusterID, other), "", http.StatusConflict)
	p.bootReplacement(t, i, p.replacementVM(t, rep))
	c.waitMachineUserdata(t, c.machines[i])
	eventually(t, c.r, rep.NewNodeName+" promoted: 3 voting etcd members", []string{c.machines[i].Name + "/console"}, 10*time.Minute,
		func(ctx context.Context) (string, error) { return c.etcdVoters(ctx, rep) })
	eventually(t, c.r, "every etcd member healthy", nil, 2*time.Minute, c.etcdHealthy)
	eventually(t, c.r, rep.NewNodeName+" Ready", c.consoles(), 5*time.Minute, func(ctx context.Context) (string, error) {
		return c.readySince(ctx, i, time.Time{})
	})
	ready := time.Since(crashed)
	p.tl.took("control-plane node: crash to its replacement Ready", ready)
	eventually(t, c.r, rep.NewNodeName+" labelled control-plane by its own taint unit", []string{c.machines[i].Name + "/console"}, 2*time.Minute,
		func(ctx context.Context) (string, error) { return c.roleLabelled(ctx, rep.NewNodeName) })
	eventually(t, c.r, fmt.Sprintf("the replacement of %s done, VM %d deleted by k8sapi", rep.OldNodeName, old.id), nil, 3*time.Minute,
		func(ctx context.Context) (string, error) { return p.replacementDone(ctx, t, old.id) })
	retiredAt := time.Now()
	writes, failed := w.finish()
	asked, missed := api.finish()
	if err := p.network.Unplug(oldNS); err != nil { // the old VM's address is free again
		fatal(t, err)
	}
	for _, f := range missed {
		t.Log("  " + f)
	}
	if len(failed) > 0 {
		fatalf(t, "%d of %d writes during the replacement failed (etcd quorum lost?):\n%s", len(failed), writes, strings.Join(failed, "\n"))
	}
	p.forgetReplacedNode(t, rep)
	refused := c.checkRetiredEtcdClientRefused(t, retired, retiredAt)
	return fmt.Sprintf("a crashed control-plane node remediated: replacement decided %.0f s and %s Ready %.0f s after the crash, etcd rejoined (%d writes meanwhile, none failed; API probe %d/%d failed); %s",
		decided.Seconds(), rep.NewNodeName, ready.Seconds(), writes, len(missed), asked, refused)
}

// roleLabelled: the Node carries the control-plane role label. Founding's
// addons label the founding nodes only; a replacement labels itself.
func (c *machineCluster) roleLabelled(ctx context.Context, node string) (string, error) {
	var n struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := c.kubectlJSON(ctx, &n, "get", "node", node); err != nil {
		return "", err
	}
	if _, ok := n.Metadata.Labels[taintKey]; !ok {
		return "", fmt.Errorf("%s has no %s label: %v", node, taintKey, n.Metadata.Labels)
	}
	return node + " labelled " + taintKey, nil
}

// replacementVM waits until the reconciler has created the new node's VM
// and its address is known, and reads it from the platform's tables.
func (p *provenCluster) replacementVM(t *testing.T, rep replacement) vm {
	t.Helper()
	var id int64
	eventually(t, p.r, "the VM of "+rep.NewNodeName+" created by the reconciler", []string{"stack"}, 3*time.Minute, func(context.Context) (string, error) {
		cv, err := getCluster(p.st, p.cl.ClusterID)
		if err != nil {
			return "", err
		}
		for _, n := range cv.Nodes {
			if n.Name == rep.NewNodeName && n.VMID != 0 && n.IPv4 != "" {
				id = n.VMID
				return fmt.Sprintf("VM %d at %s", n.VMID, n.IPv4), nil
			}
		}
		return "", fmt.Errorf("nodes %+v", cv.Nodes)
	})
	return loadVMs(t, p.st, []int64{id})[0]
}

// bootReplacement joins the new VM to the node network and boots it as
// the machine that takes machine i's place in the proof's cluster.
func (p *provenCluster) bootReplacement(t *testing.T, i int, v vm) {
	t.Helper()
	node, err := p.network.AddNode(v.addr)
	if err != nil {
		fatal(t, err)
	}
	name := fmt.Sprintf("n%d", len(p.network.Nodes))
	p.c.machines[i] = bootVM(t, p.r, p.image, node.NS, name, v, p.svc)
	p.c.vms[i] = v
}

// forgetReplacedNode removes the replaced node's Node object, as the
// operator does (k8sapi holds no in-cluster identity to), and points the
// resolver at the platform's records again (the control-plane name no
// longer names the old VM).
func (p *provenCluster) forgetReplacedNode(t *testing.T, rep replacement) {
	t.Helper()
	p.deleteNode(t, rep.OldNodeName)
	writePlatformHosts(t, p.st, p.svc.resolverHosts)
}

// replacementDone: the API no longer lists the old VM, no node is
// retiring, and the platform has deleted the old VM.
func (p *provenCluster) replacementDone(ctx context.Context, t *testing.T, oldVM int64) (string, error) {
	cv, err := getCluster(p.st, p.cl.ClusterID)
	if err != nil {
		return "", err
	}
	for _, n := range cv.Nodes {
		if n.VMID == oldVM || n.Retiring {
			return "", fmt.Errorf("node %s (VM %d) still listed, retiring %v", n.Name, n.VMID, n.Retiring)
		}
	}
	if deleted, err := vmDeleted(ctx, t, p.st, oldVM); err != nil || !deleted {
		return "", fmt.Errorf("VM %d not deleted yet (%v)", oldVM, err)
	}
	return fmt.Sprintf("control-plane VMs %v", cv.ControlPlaneVMIDs), nil
}

// vmDeleted says whether the platform's tables record the VM deleted.
func vmDeleted(ctx context.Context, t *testing.T, st stack, id int64) (bool, error) {
	conn, err := pgx.Connect(ctx, st.get(t, "DATABASE_URL"))
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var deleted bool
	err = conn.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM vms WHERE id = $1`, id).Scan(&deleted)
	return deleted, err
}

// etcdVoters: etcd lists exactly three members, none a learner, the new
// node's among them and the old node's not.
func (c *machineCluster) etcdVoters(ctx context.Context, rep replacement) (string, error) {
	voters, err := c.etcdVoting(ctx)
	if err != nil {
		return "", err
	}
	if len(voters) != 3 || !slices.Contains(voters, rep.NewNodeName) || slices.Contains(voters, rep.OldNodeName) {
		return "", fmt.Errorf("voting members %v", voters)
	}
	return strings.Join(voters, ", "), nil
}

// etcdVoting lists etcd's members as the initial node's member answers;
// an error while one is a learner.
func (c *machineCluster) etcdVoting(ctx context.Context) ([]string, error) {
	out, err := c.etcdctl(ctx, "https://"+c.vms[0].addr.Addr().String()+":2379", "member", "list", "-w", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Members []struct {
			Name      string `json:"name"`
			IsLearner bool   `json:"isLearner"`
		} `json:"members"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	var voters []string
	for _, m := range list.Members {
		if m.IsLearner {
			return nil, fmt.Errorf("%s is still a learner", m.Name)
		}
		voters = append(voters, m.Name)
	}
	return voters, nil
}

// logEtcdStatus logs each member's status (which one leads) before a
// member is stopped.
func (c *machineCluster) logEtcdStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.etcdctl(ctx, c.etcdEndpoints(), "endpoint", "status", "-w", "table")
	t.Logf("etcd before the replacement (%v):\n%s", err, out)
}

// quorumWriter creates a ConfigMap through the initial node's API server
// every second until it is finished: each write needs etcd's quorum.
type quorumWriter struct {
	stop, done chan struct{}
	once       sync.Once
	writes     int
	failed     []string
}

func (c *machineCluster) startWriter(prefix string) *quorumWriter {
	w := &quorumWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(time.Second):
			}
			w.writes++
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := c.kubectl(ctx, "create", "configmap", fmt.Sprintf("%s-%d", prefix, w.writes))
			cancel()
			if err != nil {
				w.failed = append(w.failed, fmt.Sprintf("write %d at %s: %v %s", w.writes, time.Now().Format(time.TimeOnly), err, out))
			}
		}
	}()
	return w
}

// finish stops the writer and says how many writes it made and which
// failed.
func (w *quorumWriter) finish() (int, []string) {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.writes, w.failed
}

// checkRestore founds a one-node cluster from the snapshot, boots its VM,
// and finds the marker through the new cluster's API server. Its VM and
// the cluster are torn down with the run (foundCluster deletes it).
func (p *provenCluster) checkRestore(t *testing.T, snapshot int64, marker string) string {
	t.Helper()
	start := time.Now()
	restoreFrom := fmt.Sprintf(`"restore_from":{"cluster_id":%d,"snapshot_id":%d}`, p.cl.ClusterID, snapshot)
	cl := foundCluster(t, p.r, p.st, 1, fmt.Sprintf(`"cni":%q`, proofCNI), restoreFrom)
	v := loadVMs(t, p.st, cl.ControlPlaneVMIDs)[0]
	node, err := p.network.AddNode(v.addr)
	if err != nil {
		fatal(t, err)
	}
	writePlatformHosts(t, p.st, p.svc.resolverHosts)
	rc := &machineCluster{r: p.r, vms: []vm{v}}
	rc.machines = []*harness.Machine{bootVM(t, p.r, p.image, node.NS, "r1", v, p.svc)}
	t.Cleanup(rc.saveJournals)
	rc.waitMachineUserdata(t, rc.initial())
	rc.waitBootstrapReady(t, p.st, cl.ClusterID, newTimeline())
	eventually(t, p.r, "the marker in the restored cluster", []string{"r1/console"}, 2*time.Minute, func(ctx context.Context) (string, error) {
		out, err := rc.kubectl(ctx, "get", "configmap", markerName, "-o", "jsonpath={.data.marker}")
		if err != nil || string(out) != marker {
			return "", fmt.Errorf("got %q (%v), want %q", out, err, marker)
		}
		return string(out), nil
	})
	if cv, err := getCluster(p.st, cl.ClusterID); err != nil || cv.RestoredFromSnapshotID == nil || *cv.RestoredFromSnapshotID != snapshot {
		errorf(t, "GET /clusters/%d: restored_from_snapshot_id %v, want %d (%v)", cl.ClusterID, cv.RestoredFromSnapshotID, snapshot, err)
	}
	t.Logf("cluster %d restored from snapshot %d and ready in %.0f s", cl.ClusterID, snapshot, time.Since(start).Seconds())
	return "restored from a snapshot"
}

func decode(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		fatalf(t, "decoding %s: %v", raw, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
