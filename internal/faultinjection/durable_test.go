package faultinjection

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// These tests cut founding and deletion off mid-way and let the reconciler
// clean up. A cut-off function is one whose compute call is held at a gate
// for good: like a process killed by its timeout, it makes no further call
// and writes nothing more (its deferred undo never runs: the call never
// returns). The reconciler runs with a clock past every lease, as its first
// run after the dead function's lease ran out would. When the test ends the
// held call is let go; its writes are then refused by the lease fence.

// reconcile runs one reconciler pass, as the scheduled function does, with
// a clock later than every lease, and returns what it did.
func (s *stack) reconcile() reconciler.Report {
	s.t.Helper()
	s.reconciles++ // each run later than the last one's retries
	return s.reconcileAt(time.Duration(s.reconciles) * 10 * time.Minute)
}

// reconcileAt runs one pass with a clock later by the given amount.
func (s *stack) reconcileAt(later time.Duration) reconciler.Report {
	s.t.Helper()
	rep, err := s.reconcilerAt(later).Run(context.Background())
	if err != nil {
		s.t.Fatalf("reconciler: %v", err)
	}
	return rep
}

// reconcilerAt is a reconciler whose clock is later by the given amount.
func (s *stack) reconcilerAt(later time.Duration) *reconciler.Reconciler {
	s.t.Helper()
	token, err := simulator.IssuePrincipalToken(context.Background(), s.pool, 0, simulator.ScopeService, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	svc := *s.reconciler
	svc.Now = func() time.Time { return time.Now().Add(later) }
	return &reconciler.Reconciler{Deps: &svc, ServiceToken: token}
}

// cutOff starts a request whose compute call at g is held for good, and
// returns once the call is held.
func (s *stack) cutOff(g *gate, n int, request func() stacktest.Response) {
	g.holdOn(n)
	go request()
	<-g.arrived
	s.t.Cleanup(func() { close(g.release) })
}

// clusterRow is one cluster's state as stored.
type clusterRow struct {
	status, reason string
	keyBytes       int
}

func (s *stack) clusters() []clusterRow {
	s.t.Helper()
	rows, err := s.pool.Query(context.Background(),
		`SELECT status, (SELECT o.message FROM operations o WHERE o.target_type = 'cluster' AND o.target_id = kube_clusters.id ORDER BY o.id DESC LIMIT 1), length(wrapped_data_key) FROM kube_clusters ORDER BY id`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var out []clusterRow
	for rows.Next() {
		var c clusterRow
		if err := rows.Scan(&c.status, &c.reason, &c.keyBytes); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// assertSettled is what must hold after the reconciler ran: no cluster in
// founding; every live VM belongs to a cluster that is neither failed nor
// deleted (so nothing runs without an owner); a failed or deleted cluster is
// shredded and a failed one says why.
func (s *stack) assertSettled() {
	s.t.Helper()
	ctx := context.Background()
	for _, c := range s.clusters() {
		if c.status == "founding" {
			s.t.Errorf("a cluster is still founding after the reconciler ran")
		}
		if (c.status == "failed" || c.status == "deleted") && c.keyBytes != 0 {
			s.t.Errorf("a %s cluster keeps its data key", c.status)
		}
		if c.status == "failed" && c.reason == "" {
			s.t.Errorf("a failed cluster without a reason")
		}
	}
	live, err := s.sim.LiveInstances(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, vm := range live {
		var status string
		err := s.pool.QueryRow(ctx, `SELECT c.status FROM kube_nodes n JOIN kube_clusters c ON c.id = n.kube_cluster_id
			WHERE n.vm_id = $1`, vm.ID).Scan(&status)
		if err != nil || status == "failed" || status == "deleted" {
			s.t.Errorf("live VM %d has no owning cluster (status %q, err %v)", vm.ID, status, err)
		}
	}
}

// foundingStep is one remote step of founding, held at its nth call.
type foundingStep struct {
	step string
	gate func(*stack) *gate
	n    int
}

// foundingSteps are founding's remote steps, in order: where a cut-off or
// a killed function can leave a founding.
var foundingSteps = []foundingStep{
	{"security group create", func(s *stack) *gate { return &s.sgCreates }, 1},
	{"first VM create", func(s *stack) *gate { return &s.vmCreates }, 1},
	{"last VM create", func(s *stack) *gate { return &s.vmCreates }, 3},
	{"address polling", func(s *stack) *gate { return &s.vmReads }, 2},
}

// A founding cut off at each of its remote steps is undone by the
// reconciler: its caller got no answer and holds no key, so nothing is kept.
func TestFoundingCutOffAtEachStepIsUndone(t *testing.T) {
	for _, c := range foundingSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			s.cutOff(c.gate(s), c.n, func() stacktest.Response { return s.Create(1, stacktest.ThreeNodes) })
			if got := s.clusters(); len(got) != 1 || got[0].status != "founding" {
				t.Fatalf("while cut off: %+v, want one founding cluster (committed before the first remote call)", got)
			}
			if rep := s.reconcile(); rep.Failed != 1 {
				t.Errorf("reconciler report %+v, want one founding undone", rep)
			}
			s.assertSettled()
			if live, _ := s.sim.LiveInstances(context.Background()); len(live) != 0 {
				t.Errorf("%d VMs live after the undo", len(live))
			}
			if got := s.clusters(); got[0].status != "failed" || !strings.Contains(got[0].reason, "stopped") {
				t.Errorf("cluster %+v, want failed saying the function stopped", got[0])
			}
		})
	}
}

// A create whose answer was lost (the connection dropped after the VM was
// made) is repeated with the same token: Go's transport retries a request
// that carries an Idempotency-Key header on such a connection, and the
// compute API answers the VM the first attempt made. Three VMs, not four.
func TestLostCreateAnswerMakesNoSecondVM(t *testing.T) {
	s := newStack(t)
	s.sim.SetFaults(simulator.Faults{LoseInstanceCreateAnswerOn: 2})
	if r := s.Create(1, stacktest.ThreeNodes); r.Status != http.StatusCreated {
		t.Fatalf("= %d %s, want 201", r.Status, r.Body)
	}
	if clusters, nodes, created, live := s.counts(); clusters != 1 || nodes != 3 || created != 3 || live != 3 {
		t.Errorf("%d clusters, %d nodes, %d VMs ever created, %d live; want 1, 3, 3, 3", clusters, nodes, created, live)
	}
	s.assertSettled()
}

// A create whose answer was lost and that is not repeated (the function
// died waiting) left a VM whose id was never recorded. The undo repeats the
// create with the same token, the compute API answers that VM, and it is
// deleted. Founding marks every node's create requested in one statement
// before the first is sent (its round trips do not grow with the nodes),
// so the undo also repeats the third node's create, never sent: the
// compute API makes that VM and the undo deletes it. Three VMs were ever
// made, none is left.
func TestLostCreateAnswerThenCutOffLeavesNoOrphan(t *testing.T) {
	s := newStack(t)
	s.sim.SetFaults(simulator.Faults{LoseInstanceCreateAnswerOn: 2})
	s.cutOff(&s.vmCreates, 3, func() stacktest.Response { return s.Create(1, stacktest.ThreeNodes) }) // the transport's retry of the second create
	if rep := s.reconcile(); rep.Failed != 1 {
		t.Errorf("reconciler report %+v, want one founding undone", rep)
	}
	if _, _, created, live := s.counts(); created != 3 || live != 0 {
		t.Errorf("%d VMs ever created, %d live; want 3, 0", created, live)
	}
	s.assertSettled()
}

// A founding that outlives the answer is handed over (202 with the key to
// repeat); the reconciler finishes it, and the repeat gets the kubeconfig.
func TestSlowFoundingIsFinishedByTheReconciler(t *testing.T) {
	s := newStack(t)
	s.founder.Settings.AnswerWithin = time.Nanosecond // out of time before the first remote call
	r := stacktest.Do(t, http.MethodPost, s.APIURL+"/clusters", stacktest.ThreeNodes, s.Bearer(1))
	var view struct {
		ID     int64  `json:"cluster_id"`
		Status string `json:"status"`
	}
	if r.Status != http.StatusAccepted {
		t.Fatalf("= %d %s, want 202", r.Status, r.Body)
	}
	if r.JSON(t, &view); view.Status != "founding" {
		t.Fatalf("= %d %s, want 202 founding", r.Status, r.Body)
	}
	h := s.Bearer(1)
	h["Idempotency-Key"] = s.keyOf(view.ID)
	if r := stacktest.Do(t, http.MethodPost, s.APIURL+"/clusters", stacktest.ThreeNodes, h); r.Status != http.StatusConflict || r.ErrorCode(t) != "founding_in_progress" {
		t.Fatalf("repeat while founding = %d %s, want 409 founding_in_progress", r.Status, r.Body)
	}
	if rep := s.reconcile(); rep.Finished != 1 {
		t.Fatalf("reconciler report %+v, want one founding finished", rep)
	}
	r = stacktest.Do(t, http.MethodPost, s.APIURL+"/clusters", stacktest.ThreeNodes, h)
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"kubeconfig":"apiVersion`) {
		t.Fatalf("repeat once active = %d %s, want 201 with a kubeconfig", r.Status, r.Body)
	}
	if clusters, nodes, created, live := s.counts(); clusters != 1 || nodes != 3 || created != 3 || live != 3 {
		t.Errorf("%d clusters, %d nodes, %d VMs created, %d live; want 1, 3, 3, 3", clusters, nodes, created, live)
	}
	s.assertSettled()
}

func (s *stack) keyOf(clusterID int64) string {
	var key string
	if err := s.pool.QueryRow(context.Background(), `SELECT idempotency_key FROM kube_clusters WHERE id = $1`, clusterID).Scan(&key); err != nil {
		s.t.Fatal(err)
	}
	return key
}

// A deletion cut off mid-way (after the first VM is gone) is finished by
// the reconciler.
func TestDeletionCutOffIsFinished(t *testing.T) {
	s := newStack(t)
	id := s.activeCluster()
	s.cutOff(&s.vmDeletes, 2, func() stacktest.Response {
		return stacktest.Do(t, http.MethodDelete, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1))
	})
	if rep := s.reconcile(); rep.Deleted != 1 {
		t.Errorf("reconciler report %+v, want one deletion finished", rep)
	}
	if got := s.clusters(); got[0].status != "deleted" {
		t.Errorf("cluster %+v, want deleted", got[0])
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the deletion", live)
	}
	s.assertSettled()
}

func (s *stack) activeCluster() int64 {
	s.t.Helper()
	return s.Found(1, stacktest.ThreeNodes).ClusterID
}

// A delete the compute API keeps refusing answers 503 operation_continues
// and leaves the cluster deleting with the reason visible in GET, its VMs
// still owned by it; the reconciler retries, and finishes once the API
// accepts.
func TestPermanentDeleteErrorIsRetried(t *testing.T) {
	s := newStack(t)
	id := s.activeCluster()
	s.sim.SetFaults(simulator.Faults{FailInstanceDelete: true})
	path := s.APIURL + "/clusters/" + strconv.FormatInt(id, 10)
	// The cluster is deleting whatever the compute API said: the answer
	// says the deletion goes on, never that nothing was kept.
	if r := stacktest.Do(t, http.MethodDelete, path, "", s.Bearer(1)); r.Status != http.StatusServiceUnavailable ||
		r.ErrorCode(t) != "operation_continues" || !strings.Contains(string(r.Body), "goes on") {
		t.Fatalf("delete = %d %s, want 503 operation_continues", r.Status, r.Body)
	}
	if rep := s.reconcile(); rep.Retrying != 1 || rep.Deleted != 0 {
		t.Errorf("reconciler report %+v, want one deletion retrying", rep)
	}
	r := stacktest.Do(t, http.MethodGet, path, "", s.Bearer(1))
	if !strings.Contains(string(r.Body), `"status":"deleting"`) || !strings.Contains(string(r.Body), `"status_reason":"deleting failed`) {
		t.Errorf("GET = %s, want deleting with the reason", r.Body)
	}
	s.assertSettled()
	s.sim.SetFaults(simulator.Faults{})
	if rep := s.reconcile(); rep.Deleted != 1 {
		t.Errorf("reconciler report %+v once the API accepts, want one deletion", rep)
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the retried deletion", live)
	}
	s.assertSettled()
}

// Two reconcilers at once share the dead foundings between them (SKIP
// LOCKED) and never handle one twice.
func TestTwoReconcilersAtOnce(t *testing.T) {
	s := newStack(t)
	s.cutOff(&s.vmCreates, 1, func() stacktest.Response { return s.Create(1, stacktest.ThreeNodes) })
	s.cutOff(&s.sgCreates, 1, func() stacktest.Response { return s.Create(2, stacktest.ThreeNodes) })
	var wg sync.WaitGroup
	reports := make([]reconciler.Report, 2)
	for i := range reports {
		wg.Go(func() { reports[i] = s.reconcileAt(10 * time.Minute) }) // one clock, as in production
	}
	wg.Wait()
	if total := reports[0].Failed + reports[1].Failed; total != 2 {
		t.Errorf("reports %+v: %d foundings undone in all, want 2", reports, total)
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live", live)
	}
	s.assertSettled()
}
