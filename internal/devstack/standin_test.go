package devstack_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/internal/vmstandin"
)

// With BootVMs the simulator's VMs boot as stand-ins: a cluster founded
// through the stack reaches bootstrap ready, every node ready, with no VM
// played by hand. Without it (the default, and the node proof's stack) the
// bootstrap stays pending, as docs/API-WALKTHROUGH.md's hand-played walk-throughs need.
func TestStandInVMsBootAClusterOnlyWhenAsked(t *testing.T) {
	for _, boot := range []bool{true, false} {
		t.Run("boot_vms="+strconv.FormatBool(boot), func(t *testing.T) {
			c := standInStack(t, boot)
			id := c.Found(1, stacktest.ThreeNodes).ClusterID
			if boot {
				waitBootstrap(t, c, id, "ready", 90*time.Second)
				return
			}
			// Longer than a stand-in would take to fetch and report.
			time.Sleep(3 * time.Second)
			if st, phases := bootstrapOf(t, c, id); st != "pending" || len(phases) != 3 || phases[0] != "pending" {
				t.Fatalf("without stand-ins: bootstrap %s, nodes %v; want pending", st, phases)
			}
		})
	}
}

// standInStack is k8sapi in-process (stacktest) behind StartSimulator as
// the local stack starts it, with stand-in VMs or without.
func standInStack(t *testing.T, boot bool) *stacktest.Client {
	c, _ := answeringStack(t, boot)
	return c
}

// answered counts k8sapi's answers by method, path and status.
type answered struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *answered) count(method, path string, status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[fmt.Sprintf("%s %s %d", method, path, status)]++
}

func (a *answered) get(method, path string, status int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[fmt.Sprintf("%s %s %d", method, path, status)]
}

// answeringStack is standInStack, with every answer of k8sapi counted.
func answeringStack(t *testing.T, boot bool) (*stacktest.Client, *answered) {
	t.Helper()
	dsn := testenv.Postgres(t)
	simPool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(simPool.Close)
	// The simulator needs k8sapi's URL and k8sapi the simulator's: serve
	// k8sapi first, its handler set once built.
	var handler atomic.Pointer[http.Handler]
	answers := &answered{n: map[string]int{}}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		(*handler.Load()).ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		answers.count(r.Method, r.URL.Path, rec.Code)
	}))
	t.Cleanup(api.Close)
	standIns := vmstandin.Config{Delay: 50 * time.Millisecond, SnapshotEvery: 200 * time.Millisecond}
	if boot {
		standIns.APIBaseURL = api.URL
	}
	simURL, stop, err := devstack.StartSimulator(simPool, logger(t), standIns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	kms, keyID := testenv.KMSKey(t)
	bucket, awsCfg := testenv.SnapshotBucket(t)
	in, err := stacktest.New(stacktest.Config{
		SnapshotBucket: &objectstore.Bucket{AWS: awsCfg, Name: bucket},
		Pools:          stacktest.FunctionPools(t, func(fn string) string { return testenv.FunctionDSN(t, dsn, fn) }, nil),
		Envelope:       envelope.New(kms, keyID, nil), SimURL: simURL,
		BaseDomain: "k8s.test.excloud", BootstrapBaseURL: "https://k8sapi.test.excloud", Log: logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(&in.Handler)
	return &stacktest.Client{T: t, APIURL: api.URL, SimURL: simURL, Pool: simPool}, answers
}

// waitBootstrap waits until cluster id's bootstrap is in state with every
// node in the same phase.
func waitBootstrap(t *testing.T, c *stacktest.Client, id int64, state string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, phases := bootstrapOf(t, c, id)
		if st == state && allAre(phases, state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bootstrap %s, nodes %v after %s; want %s", st, phases, within, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bootstrapOf is cluster id's bootstrap state and its nodes' phases.
func bootstrapOf(t *testing.T, c *stacktest.Client, id int64) (string, []string) {
	t.Helper()
	r := stacktest.Do(t, http.MethodGet, c.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", c.Bearer(1))
	var got struct {
		Bootstrap struct {
			State string
			Nodes []struct{ Phase string }
		}
	}
	r.JSON(t, &got)
	var phases []string
	for _, n := range got.Bootstrap.Nodes {
		phases = append(phases, n.Phase)
	}
	return got.Bootstrap.State, phases
}

func allAre(phases []string, want string) bool {
	for _, p := range phases {
		if p != want {
			return false
		}
	}
	return len(phases) > 0
}

// logger writes to the test's output, which outlives no cleanup.
func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// With BootVMs the operator's journey runs with no VM played by hand: a
// pool's workers boot as workers (their own route, their CSRs over keys
// born on the stand-in, their reports) and end ready; every ready node
// renews its certificates over the keys it holds, as its timer does; a
// snapshot asked for is taken by the chosen control-plane stand-in,
// uploaded to S3 (moto) and reported; a cluster restored from it boots
// ready, its stand-in having downloaded the snapshot and checked its size
// and SHA-256; and the pool and both clusters delete cleanly.
func TestStandInVMsWalkTheOperatorsJourney(t *testing.T) {
	c, answers := answeringStack(t, true)
	id := c.Found(1, stacktest.OneNode).ClusterID
	waitBootstrap(t, c, id, "ready", 90*time.Second)

	c.AddPool(1, id, stacktest.TwoWorkers)
	waitFor(t, "the pool's workers ready", 90*time.Second, func() (bool, string) {
		phases := workerPhases(t, c, id, "workers")
		return len(phases) == 2 && allAre(phases, "ready"), strings.Join(phases, ",")
	})

	r := stacktest.Do(t, http.MethodPost, clusterURL(c, id)+"/etcd-snapshots", "", c.Bearer(1))
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST etcd-snapshots = %d %s", r.Status, r.Body)
	}
	var snap struct{ ID int64 }
	r.JSON(t, &snap)
	waitFor(t, "the snapshot uploaded", 30*time.Second, func() (bool, string) {
		st := snapshotState(t, c, id, snap.ID)
		return st == "uploaded", st
	})

	restore := strings.TrimSuffix(stacktest.OneNode, "}") +
		fmt.Sprintf(`,"restore_from":{"cluster_id":%d,"snapshot_id":%d}}`, id, snap.ID)
	restored := c.Found(1, restore).ClusterID
	waitBootstrap(t, c, restored, "ready", 90*time.Second)

	// Ready, every node renewed at once, as a node's timer renews: the
	// control plane, both workers and the restored cluster's node.
	for _, vm := range poolVMs(t, c, id, "workers") {
		if n := answers.get(http.MethodPost, fmt.Sprintf("/bootstrap/worker/%d/renew", vm), http.StatusOK); n != 1 {
			t.Errorf("worker vm %d renewed %d times, want 1", vm, n)
		}
	}
	for _, cluster := range []int64{id, restored} {
		vm := controlPlaneVMs(t, c, cluster)[0]
		waitFor(t, "the control plane renewed", 10*time.Second, func() (bool, string) {
			n := answers.get(http.MethodPost, fmt.Sprintf("/bootstrap/control-plane/%d/renew", vm), http.StatusOK)
			return n == 1, strconv.Itoa(n)
		})
	}

	if r := stacktest.Do(t, http.MethodDelete, c.PoolsURL(id, "workers"), "", c.Bearer(1)); r.Status/100 != 2 {
		t.Fatalf("DELETE the pool = %d %s", r.Status, r.Body)
	}
	waitFor(t, "the pool gone", 60*time.Second, func() (bool, string) {
		r := stacktest.Do(t, http.MethodGet, c.PoolsURL(id, "workers"), "", c.Bearer(1))
		return r.Status == http.StatusNotFound, strconv.Itoa(r.Status)
	})
	for _, cluster := range []int64{restored, id} {
		if r := stacktest.Do(t, http.MethodDelete, clusterURL(c, cluster), "", c.Bearer(1)); r.Status != http.StatusOK {
			t.Fatalf("DELETE cluster %d = %d %s", cluster, r.Status, r.Body)
		}
		waitFor(t, "the cluster deleted", 60*time.Second, func() (bool, string) {
			var got apitypes.ClusterView
			stacktest.Do(t, http.MethodGet, clusterURL(c, cluster), "", c.Bearer(1)).JSON(t, &got)
			return got.Status == "deleted", got.Status
		})
	}
}

// poolVMs are the VM ids of pool's workers of cluster id.
func poolVMs(t *testing.T, c *stacktest.Client, id int64, pool string) []int64 {
	var vms []int64
	for _, n := range poolWorkers(t, c, id, pool) {
		vms = append(vms, n.VMID)
	}
	return vms
}

// controlPlaneVMs are cluster id's control-plane VM ids.
func controlPlaneVMs(t *testing.T, c *stacktest.Client, id int64) []int64 {
	t.Helper()
	var got apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, clusterURL(c, id), "", c.Bearer(1)).JSON(t, &got)
	return got.ControlPlaneVMIDs
}

func clusterURL(c *stacktest.Client, id int64) string {
	return c.APIURL + "/clusters/" + strconv.FormatInt(id, 10)
}

// waitFor polls done until it holds, failing the test with what it last
// said after within.
func waitFor(t *testing.T, what string, within time.Duration, done func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, said := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s (%s)", what, within, said)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workerPhases are the phases of pool's workers of cluster id.
func workerPhases(t *testing.T, c *stacktest.Client, id int64, pool string) []string {
	var phases []string
	for _, n := range poolWorkers(t, c, id, pool) {
		phases = append(phases, n.Phase)
	}
	return phases
}

// poolWorkers are pool's workers of cluster id, as its view shows them.
func poolWorkers(t *testing.T, c *stacktest.Client, id int64, pool string) []apitypes.WorkerView {
	t.Helper()
	var p apitypes.NodePool
	stacktest.Do(t, http.MethodGet, c.PoolsURL(id, pool), "", c.Bearer(1)).JSON(t, &p)
	return p.Nodes
}

// snapshotState is the state of cluster id's snapshot snap.
func snapshotState(t *testing.T, c *stacktest.Client, id, snap int64) string {
	t.Helper()
	var list struct {
		Snapshots []struct {
			ID    int64
			State string
		}
	}
	stacktest.Do(t, http.MethodGet, clusterURL(c, id)+"/etcd-snapshots", "", c.Bearer(1)).JSON(t, &list)
	for _, s := range list.Snapshots {
		if s.ID == snap {
			return s.State
		}
	}
	return "absent"
}
