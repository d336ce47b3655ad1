package integration

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/dbmigrate"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/internal/trail"
	"github.com/excloud/k8sapi/internal/usecase"
)

// A database founded by an older k8sapi, carried forward by today's
// migrations, reads back as it did: every cluster, node, pool, worker,
// replacement, snapshot, kubeconfig issue and audit event. The old
// databases are fixtures (testdata/founded-on-v<N>.sql, a data-only
// pg_dump; beside it the reads as that k8sapi answered them), each made
// with -update-fixture on the commit whose newest migration is N; a
// migration that loses or changes a row fails here.
var updateFixture = flag.Bool("update-fixture", false,
	"found a fleet through the stack and write testdata/founded-on-v<newest migration>.{sql,json}")

// fixtureVersions are the schemas a fixture was founded on.
var fixtureVersions = []int32{21, 24}

func TestMigrationsCarryAnOldDatabaseForward(t *testing.T) {
	if *updateFixture {
		writeFixture(t)
	}
	for _, v := range fixtureVersions {
		t.Run(fmt.Sprintf("v%03d", v), func(t *testing.T) { checkCarriedForward(t, v) })
	}
}

// fixtureOrg is the org whose fleet the fixture holds.
var fixtureOrg = auth.Principal{OrgID: 1}

// checkCarriedForward loads the fixture founded on version into a
// database at that version, migrates it to today's, and reads it back.
func checkCarriedForward(t *testing.T, version int32) {
	ctx := context.Background()
	dsn := testenv.EmptyDatabase(t, fmt.Sprintf("forward%03d", version))
	if err := dbmigrate.ApplyK8sapiTo(ctx, dsn, true, version); err != nil {
		t.Fatalf("migrating to %d: %v", version, err)
	}
	psql(t, dsn, fixturePath(version, "sql"))
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil {
		t.Fatalf("migrating forward from %d: %v", version, err)
	}
	pool, err := store.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var want map[string]any
	raw, err := os.ReadFile(fixturePath(version, "json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	got := readBack(t, st, clusterIDsOf(want))
	for _, diff := range subsetDiffs("", want, got) {
		t.Error(diff)
	}
	for _, id := range clusterIDsOf(want) {
		checkOperations(t, st, id, want, got)
	}
}

// checkOperations: the old database's cluster id, its pools and its
// replacement have their operations in the table of operations (migration
// 025), in the state their old columns said, and their conditions say the
// same.
func checkOperations(t *testing.T, st *store.Store, id int64, want, got map[string]any) {
	t.Helper()
	key := func(what string) string { return fmt.Sprintf("cluster %d %s", id, what) }
	ops, err := st.OperationsOf(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := want[key("get")].(map[string]any)
	status, _ := old["status"].(string)
	reason, _ := old["status_reason"].(string)
	own := opsOn(ops, store.TargetCluster, id)
	if len(own) == 0 || own[0].Kind != store.KindFounding {
		t.Errorf("cluster %d: operations %+v, want its founding first", id, own)
		return
	}
	last := own[len(own)-1]
	if w := clusterOpOf(status); last.Kind != w.Kind || last.State != w.State || last.Message != reason {
		t.Errorf("cluster %d (%s, %q): latest operation %+v, want a %s %s saying %q", id, status, reason, last, w.State, w.Kind, reason)
	}
	checkConditions(t, key("get"), got[key("get")], status, status == store.StatusActive, last.State == store.OpRunning)
	pools, _ := got[key("pools")].([]any)
	for i, p := range pools {
		state, _ := p.(map[string]any)["state"].(string)
		checkConditions(t, fmt.Sprintf("%s[%d]", key("pools"), i), p, state, state == store.PoolActive, slices.Contains(livePoolStates, state))
	}
	if n := len(opsWhere(ops, func(o store.OpTarget) bool { return o.Kind == store.KindNodePool })); n < len(pools) {
		t.Errorf("cluster %d: %d pool operations for %d pools", id, n, len(pools))
	}
	if r, ok := want[key("replacement")].(map[string]any); ok {
		rid, _ := r["id"].(float64)
		if live := opsOn(ops, store.TargetNodeReplacement, int64(rid)); len(live) != 1 || live[0].State != store.OpRunning {
			t.Errorf("cluster %d: replacement %v's operations %+v, want one running", id, rid, live)
		}
	}
}

// livePoolStates are the pool states an operation drives.
var livePoolStates = []string{store.PoolCreating, store.PoolScaling, store.PoolDeleting, store.PoolFailing}

// clusterOpOf is the kind and state of the latest own operation of a
// cluster in status.
func clusterOpOf(status string) store.OpTarget {
	switch status {
	case store.StatusFounding:
		return store.OpTarget{Kind: store.KindFounding, State: store.OpRunning}
	case store.StatusFailed:
		return store.OpTarget{Kind: store.KindFounding, State: store.OpFailed}
	case store.StatusDeleting:
		return store.OpTarget{Kind: store.KindDeletion, State: store.OpRunning}
	case store.StatusDeleted:
		return store.OpTarget{Kind: store.KindDeletion, State: store.OpSucceeded}
	}
	return store.OpTarget{Kind: store.KindFounding, State: store.OpSucceeded}
}

// checkConditions: the view (a JSON object) at what says Ready as ready
// (its reason the state's) and Progressing as live.
func checkConditions(t *testing.T, what string, view any, state string, ready, live bool) {
	t.Helper()
	conds, _ := view.(map[string]any)["conditions"].([]any)
	byType := map[string]map[string]any{}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		byType[fmt.Sprint(m["type"])] = m
	}
	r, p := byType["Ready"], byType["Progressing"]
	if r == nil || p == nil || (r["status"] == "True") != ready || !strings.EqualFold(fmt.Sprint(r["reason"]), state) ||
		(p["status"] == "True") != live {
		t.Errorf("%s (%s): conditions %v, want Ready %v and Progressing %v", what, state, conds, ready, live)
	}
}

// opsOn are the operations of ops on the target (type, id).
func opsOn(ops []store.OpTarget, targetType string, id int64) []store.OpTarget {
	return opsWhere(ops, func(o store.OpTarget) bool { return o.TargetType == targetType && o.TargetID == id })
}

func opsWhere(ops []store.OpTarget, keep func(store.OpTarget) bool) []store.OpTarget {
	var out []store.OpTarget
	for _, o := range ops {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// readBack is what the operator's reads answer of each cluster of ids, by
// name, as JSON values (the fixture's and today's types need not be the
// same Go types, only the same answers).
func readBack(t *testing.T, st *store.Store, ids []int64) map[string]any {
	ctx := context.Background()
	d := &usecase.Deps{Store: st}
	reads := map[string]any{"cluster_ids": mustRead(t, "ids", ids, nil)}
	page, err := (&cluster.Service{Deps: d}).List(ctx, fixtureOrg, cluster.ListQuery{Limit: 100})
	reads["clusters"] = mustRead(t, "list", page, err)
	for _, id := range ids {
		key := func(what string) string { return fmt.Sprintf("cluster %d %s", id, what) }
		c, err := (&cluster.Service{Deps: d}).Get(ctx, fixtureOrg, id)
		reads[key("get")] = mustRead(t, key("get"), c, err)
		pools, err := (&nodepool.Service{Deps: d}).Pools(ctx, fixtureOrg, id)
		reads[key("pools")] = mustRead(t, key("pools"), pools, err)
		snaps, err := (&etcdsnapshot.Operator{Store: st}).List(ctx, fixtureOrg, id)
		reads[key("snapshots")] = mustRead(t, key("snapshots"), snaps, err)
		issues, err := (&adminkubeconfig.Service{Deps: d}).Kubeconfigs(ctx, fixtureOrg, id)
		reads[key("kubeconfigs")] = mustRead(t, key("kubeconfigs"), issues, err)
		events, err := (&trail.Trail{Store: st}).Events(ctx, fixtureOrg, id, trail.Query{Limit: 200})
		reads[key("events")] = mustRead(t, key("events"), events, err)
		reads[key("replacement")] = liveReplacement(t, st, id)
		ops, err := st.OperationsOf(ctx, id)
		reads[key("operations")] = mustRead(t, key("operations"), ops, err)
	}
	return reads
}

// liveReplacement is cluster id's replacement in progress as the fields
// the reconciler drives it by (no route shows it whole yet), or nil.
func liveReplacement(t *testing.T, st *store.Store, id int64) any {
	r, err := st.LiveReplacement(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return mustRead(t, "replacement", map[string]any{"id": r.ID, "state": r.State, "old_node_name": r.OldNodeName,
		"new_node_name": r.NewNodeName, "old_vm_id": r.OldVMID}, err)
}

// mustRead is v as a JSON value, failing the test on err.
func mustRead(t *testing.T, what string, v any, err error) any {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// clusterIDsOf is the ids of the clusters the fixture holds (a deleted
// one too, which the listing leaves out).
func clusterIDsOf(reads map[string]any) []int64 {
	var ids []int64
	listed, _ := reads["cluster_ids"].([]any)
	for _, id := range listed {
		if n, ok := id.(float64); ok {
			ids = append(ids, int64(n))
		}
	}
	return ids
}

// timeRelative are the answers' fields computed against the clock, not
// read from rows: a bootstrap that was waiting then has timed out now.
var timeRelative = map[string]bool{"bootstrap": true, "phase_timeline": true}

// subsetDiffs is every place where want, at path, is not in got: objects
// may have gained fields (a migration adds columns), never lost or changed
// one; lists keep their length and order.
func subsetDiffs(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: was an object, now %v", path, got)}
		}
		var diffs []string
		for _, k := range sortedKeys(w) {
			if timeRelative[k] {
				continue
			}
			diffs = append(diffs, subsetDiffs(path+"."+k, w[k], g[k])...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: was %d items, now %v", path, len(w), got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, subsetDiffs(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: was %v, now %v", path, want, got)}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fixturePath(version int32, ext string) string {
	return filepath.Join("testdata", fmt.Sprintf("founded-on-v%03d.%s", version, ext))
}

// psql runs the SQL file into the database at dsn, stopping at the first
// error.
func psql(t *testing.T, dsn, file string) {
	t.Helper()
	out, err := exec.Command("psql", "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--dbname="+dsn, "--file="+file).CombinedOutput()
	if err != nil {
		t.Fatalf("psql -f %s: %v\n%s", file, err, out)
	}
}

// writeFixture founds a fleet through today's stack (a cluster with
// every node Ready, an uploaded snapshot, a pool of two workers, a
// replacement in progress, an issued kubeconfig; a second cluster
// deleted) and writes its data and its reads as the fixture of the
// newest migration.
func writeFixture(t *testing.T) {
	version := newestMigration(t)
	s, _ := snapshotStack(t)
	res, _ := s.uploadedSnapshot(fixtureOrg.OrgID)
	for _, vm := range res.ControlPlaneVMIDs[1:] {
		node := s.proof(vm)
		s.FetchBundle(node.id, node.imds, node.access)
		s.mustReport(node, `{"phase":"ready"}`, http.StatusNoContent)
	}
	s.AddPool(fixtureOrg.OrgID, res.ClusterID, stacktest.TwoWorkers)
	replace := fmt.Sprintf("%s/clusters/%d/nodes/%d/replace", s.api.URL, res.ClusterID, res.ControlPlaneVMIDs[2])
	if r := stacktest.Do(t, http.MethodPost, replace, "", s.Bearer(fixtureOrg.OrgID)); r.Status != http.StatusAccepted {
		t.Fatalf("replace = %d %s", r.Status, r.Body)
	}
	s.issueKubeconfig(fixtureOrg.OrgID, res.ClusterID, `{"ttl":"1h"}`)
	gone := s.Found(fixtureOrg.OrgID, stacktest.ThreeNodes)
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(gone.ClusterID), "", s.Bearer(fixtureOrg.OrgID)); r.Status != http.StatusOK {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	reads, err := json.MarshalIndent(readBack(t, store.New(s.pool), []int64{res.ClusterID, gone.ClusterID}), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, fixturePath(version, "json"), append(reads, '\n'))
	writeFile(t, fixturePath(version, "sql"), dataOnlyDump(t, s.dsn))
	t.Fatalf("wrote the fixture of v%03d: add %d to fixtureVersions if it is new, then run without -update-fixture", version, version)
}

// dataOnlyDump is the database's rows as SQL, without the migrations'
// own bookkeeping and the rows they seed (the target database has both,
// at the fixture's version: the platform stand-ins' subnets).
func dataOnlyDump(t *testing.T, dsn string) []byte {
	t.Helper()
	out, err := exec.Command("pg_dump", "--data-only", "--no-owner", "--no-privileges", "--exclude-table=*schema_version*",
		"--exclude-table=public.subnets", "--dbname="+dsn).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return out
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newestMigration is the version of the newest k8sapi migration.
func newestMigration(t *testing.T) int32 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "..", "migrations", "k8sapi"))
	if err != nil {
		t.Fatal(err)
	}
	var newest int32
	for _, e := range entries {
		var n int32
		if _, err := fmt.Sscanf(e.Name(), "%03d_", &n); err == nil && strings.HasSuffix(e.Name(), ".sql") && n > newest {
			newest = n
		}
	}
	return newest
}
