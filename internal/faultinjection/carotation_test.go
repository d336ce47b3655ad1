package faultinjection

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

// A CA rotation cut off at each step: before every reconciler run a
// driver claims the rotation and dies holding its lease (a function that
// timed out or crashed mid-step: every step's writes are one statement or
// one transaction, so it left all of a step or none). The next run, past
// that lease, carries on from the rows, and the rotation ends on the new
// roots, each made once; an abort recorded while a driver holds the
// rotation makes that driver's phase move write nothing, and the next run
// turns it back.

// rotatingNode founds one node that fetched its bundle and is ready, and
// asks for a rotation of all four roots.
func (s *stack) rotatingNode() (id int64, renew func()) {
	s.t.Helper()
	res := s.Found(1, stacktest.OneNode)
	vm := res.ControlPlaneVMIDs[0]
	imds, access := s.VMCredentials(vm)
	var b struct {
		Files map[string]string `json:"files"`
	}
	r := s.FetchBundle(vm, imds, access)
	if err := json.Unmarshal(r.Body, &b); err != nil || r.Status != http.StatusOK {
		s.t.Fatalf("bundle: %d %v", r.Status, err)
	}
	s.markReady(vm)
	if r := s.rotate(res.ClusterID, ""); r.Status != http.StatusAccepted {
		s.t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	return res.ClusterID, func() {
		imds, access := s.VMCredentials(vm)
		if r := s.Renew(vm, imds, access, stacktest.RenewalRequest(s.t, b.Files)); r.Status != http.StatusOK {
			s.t.Fatalf("renew: %d %s", r.Status, r.Body)
		}
	}
}

func (s *stack) rotate(id int64, suffix string) stacktest.Response {
	return stacktest.Do(s.t, http.MethodPost, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10)+"/rotate-ca"+suffix, "", s.Bearer(1))
}

// dieHolding claims the due operation as a driver that then dies: its
// lease runs out before the next reconciler run's clock.
func (s *stack) dieHolding() {
	s.t.Helper()
	st := store.New(s.pool)
	later := time.Now().Add(time.Duration(s.reconciles)*10*time.Minute + time.Minute)
	if _, err := st.ClaimDue(context.Background(), store.Lease{Owner: "dead-driver", Until: later}, later); err != nil {
		s.t.Fatalf("a dead driver's claim: %v", err)
	}
}

// rotationState is the rotation's phase and operation state, and each
// root's generation states, oldest first.
func (s *stack) rotationState(id int64) (phase, state string, gens map[string][]string) {
	s.t.Helper()
	err := s.pool.QueryRow(context.Background(), `SELECT r.phase, o.state FROM ca_rotations r JOIN operations o ON o.id = r.operation_id
		WHERE r.kube_cluster_id = $1 ORDER BY r.operation_id DESC LIMIT 1`, id).Scan(&phase, &state)
	if err != nil {
		s.t.Fatal(err)
	}
	rows, err := s.pool.Query(context.Background(), `SELECT root, state FROM ca_generations WHERE kube_cluster_id = $1 ORDER BY root, generation`, id)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	gens = map[string][]string{}
	for rows.Next() {
		var root, st string
		if err := rows.Scan(&root, &st); err != nil {
			s.t.Fatal(err)
		}
		gens[root] = append(gens[root], st)
	}
	return phase, state, gens
}

func TestCARotationCutOffAtEachStepFinishes(t *testing.T) {
	s := newStack(t)
	id, renew := s.rotatingNode()
	for range 12 {
		if _, state, _ := s.rotationState(id); state != "running" {
			break
		}
		s.dieHolding()
		s.reconcile()
		renew()
	}
	phase, state, gens := s.rotationState(id)
	if phase != "done" || state != "succeeded" {
		t.Fatalf("rotation at %s (%s), want done", phase, state)
	}
	for _, root := range []string{"ca", "etcd-ca", "front-proxy-ca", "service-account"} {
		if g := gens[root]; len(g) != 2 || g[0] != "retired" || g[1] != "current" {
			t.Errorf("%s: %v, want one retired and one current generation: each made once", root, g)
		}
	}
	s.assertNoLease(id)
}

func TestCARotationAbortedWhileADriverHoldsItTurnsBack(t *testing.T) {
	s := newStack(t)
	id, renew := s.rotatingNode()
	s.reconcile()
	renew()
	s.reconcile() // signing
	renew()
	if phase, _, _ := s.rotationState(id); phase != "signing" {
		t.Fatalf("rotation at %s, want signing", phase)
	}
	s.dieHolding()
	if r := s.rotate(id, "/abort"); r.Status != http.StatusAccepted {
		t.Fatalf("abort: %d %s", r.Status, r.Body)
	}
	for range 8 {
		if _, state, _ := s.rotationState(id); state != "running" {
			break
		}
		s.reconcile()
		renew()
	}
	phase, state, gens := s.rotationState(id)
	if phase != "aborted" || state != "failed" {
		t.Fatalf("rotation at %s (%s), want aborted", phase, state)
	}
	for root, g := range gens {
		if len(g) != 2 || g[0] != "current" || g[1] != "retired" {
			t.Errorf("%s: %v, want the first generation current again and the new one retired", root, g)
		}
	}
	s.assertNoLease(id)
}

// assertNoLease: no operation of the cluster is live or holds a lease.
func (s *stack) assertNoLease(id int64) {
	s.t.Helper()
	var live int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM operations WHERE kube_cluster_id = $1
		AND (ended_at IS NULL OR lease_owner IS NOT NULL)`, id).Scan(&live); err != nil || live != 0 {
		s.t.Fatalf("%d live or leased operations (%v)", live, err)
	}
}
