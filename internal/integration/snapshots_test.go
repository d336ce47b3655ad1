package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/testenv"
)

// snapshotItem is one item of GET /clusters/{id}/etcd-snapshots.
type snapshotItem = apitypes.EtcdSnapshot

type uploadBody struct {
	ID        int64     `json:"id"`
	ClusterID int64     `json:"cluster_id"`
	ObjectKey string    `json:"object_key"`
	UploadURL string    `json:"upload_url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// snapshotStack is a stack whose GetBundleFunction presigns into a fresh
// bucket of moto's S3.
func snapshotStack(t *testing.T) (*stack, *objectstore.Bucket) {
	name, cfg := testenvBucket(t)
	b := &objectstore.Bucket{AWS: cfg, Name: name}
	s := newStack(t, func(c *stacktest.Config) { c.SnapshotBucket = b })
	return s, b
}

func (s *stack) takeSnapshot(org, id int64) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/etcd-snapshots", "", s.Bearer(org))
}

func (s *stack) snapshots(org, id int64) []snapshotItem {
	s.t.Helper()
	r := stacktest.Do(s.t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id)+"/etcd-snapshots", "", s.Bearer(org))
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET etcd-snapshots = %d %s", r.Status, r.Body)
	}
	var list struct {
		Snapshots []snapshotItem `json:"snapshots"`
	}
	r.JSON(s.t, &list)
	return list.Snapshots
}

func (s *stack) askSnapshot(vm vmProof) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/etcd-snapshot", "", map[string]string{
		"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access,
	})
}

func (s *stack) reportSnapshot(vm vmProof, body string) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodPost, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/etcd-snapshot", body, map[string]string{
		"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access, "Content-Type": "application/json",
	})
}

// put uploads body to a presigned URL as curl does.
func put(t *testing.T, rawURL string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An operator asks for a snapshot; the lowest-ordinal Ready node is named;
// it alone gets a presigned URL of the snapshot's one key; it uploads,
// reports, and k8sapi finds the object before listing it uploaded, with
// who asked, size and SHA-256. Both state changes are in the trail.
func TestEtcdSnapshotOnDemand(t *testing.T) {
	s, bucket := snapshotStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	id := res.ClusterID

	// No node is Ready yet: nobody can take it.
	if r := s.takeSnapshot(1, id); r.Status != http.StatusConflict || r.ErrorCode(t) != "no_ready_node" {
		t.Fatalf("no Ready node: %d %s", r.Status, r.Body)
	}
	// The second and third nodes become Ready: the second is chosen.
	second, third := s.proof(res.ControlPlaneVMIDs[1]), s.proof(res.ControlPlaneVMIDs[2])
	for _, vm := range []vmProof{third, second} {
		s.FetchBundle(vm.id, vm.imds, vm.access)
		s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	}
	r := s.takeSnapshot(1, id)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST etcd-snapshots = %d %s", r.Status, r.Body)
	}
	var taken snapshotItem
	r.JSON(t, &taken)
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()
	if taken.NodeVMID != second.id || taken.State != "pending" || taken.Trigger != "on_demand" || taken.RequestedBy != who {
		t.Fatalf("taken = %+v, want pending on_demand by %s on vm %d", taken, who, second.id)
	}
	if want := "etcd-snapshots/" + itoa(id) + "/" + itoa(taken.ID) + ".db"; taken.ObjectKey != want {
		t.Fatalf("object key %q, want %q", taken.ObjectKey, want)
	}
	// One at a time.
	if r := s.takeSnapshot(1, id); r.Status != http.StatusConflict || r.ErrorCode(t) != "etcd_snapshot_in_progress" {
		t.Fatalf("second ask: %d %s", r.Status, r.Body)
	}
	// Another org's operator sees no such cluster.
	if r := s.takeSnapshot(2, id); r.Status != http.StatusNotFound {
		t.Fatalf("org 2 takes: %d %s", r.Status, r.Body)
	}

	// The node that was not chosen has nothing to take.
	if r := s.askSnapshot(third); r.Status != http.StatusNoContent {
		t.Fatalf("unchosen node asks: %d %s", r.Status, r.Body)
	}
	r = s.askSnapshot(second)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("chosen node asks: %d %s", r.Status, r.Body)
	}
	var up uploadBody
	r.JSON(t, &up)
	if up.ID != taken.ID || up.ObjectKey != taken.ObjectKey || up.ClusterID != id {
		t.Fatalf("upload %+v for %+v", up, taken)
	}
	checkOneObjectURL(t, bucket, up)

	body := []byte("etcd snapshot bytes of cluster " + itoa(id))
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])

	// Reported before anything was uploaded: refused, nothing written.
	rep := `{"id":` + itoa(up.ID) + `,"size_bytes":` + itoa(int64(len(body))) + `,"sha256":"` + digest + `"}`
	if r := s.reportSnapshot(second, rep); r.Status != http.StatusUnprocessableEntity || r.ErrorCode(t) != "snapshot_not_uploaded" {
		t.Fatalf("report before upload: %d %s", r.Status, r.Body)
	}
	if code := put(t, up.UploadURL, body); code != http.StatusOK {
		t.Fatalf("PUT to the presigned URL: %d", code)
	}
	// A size the object does not have: refused, still pending.
	bad := `{"id":` + itoa(up.ID) + `,"size_bytes":` + itoa(int64(len(body))+1) + `,"sha256":"` + digest + `"}`
	if r := s.reportSnapshot(second, bad); r.Status != http.StatusUnprocessableEntity || r.ErrorCode(t) != "snapshot_size_mismatch" {
		t.Fatalf("report of a wrong size: %d %s", r.Status, r.Body)
	}
	if got := s.snapshots(1, id); len(got) != 1 || got[0].State != "pending" {
		t.Fatalf("after a refused report: %+v", got)
	}
	// Another node of the cluster cannot report it.
	if r := s.reportSnapshot(third, rep); r.Status != http.StatusNotFound {
		t.Fatalf("unchosen node reports: %d %s", r.Status, r.Body)
	}
	if r := s.reportSnapshot(second, rep); r.Status != http.StatusOK {
		t.Fatalf("report: %d %s", r.Status, r.Body)
	}
	// Reported once: a second report finds nothing pending.
	if r := s.reportSnapshot(second, rep); r.Status != http.StatusNotFound {
		t.Fatalf("second report: %d %s", r.Status, r.Body)
	}
	list := s.snapshots(1, id)
	if len(list) != 1 {
		t.Fatalf("list = %+v", list)
	}
	got := list[0]
	if got.State != "uploaded" || got.SizeBytes == nil || *got.SizeBytes != int64(len(body)) || got.SHA256 == nil ||
		*got.SHA256 != digest || got.RequestedBy != who || got.FinishedAt == nil {
		t.Fatalf("listed %+v", got)
	}
	// The asked-for snapshot is now done: nothing more to take.
	if r := s.askSnapshot(second); r.Status != http.StatusNoContent {
		t.Fatalf("after the report: %d %s", r.Status, r.Body)
	}

	actions := map[string]string{}
	for _, e := range s.auditEvents(1, id) {
		if strings.HasPrefix(e.Action, "etcd_snapshot.") && e.Outcome == "succeeded" {
			actions[e.Action] = e.Principal
		}
	}
	if actions["etcd_snapshot.take"] != who || actions["etcd_snapshot.upload_url"] != "org:1:vm:"+itoa(second.id) ||
		actions["etcd_snapshot.report"] != "org:1:vm:"+itoa(second.id) {
		t.Fatalf("audit trail: %v", actions)
	}
}

// checkOneObjectURL holds the presigned URL to one object: a PUT of the
// snapshot's key in the configured bucket, signed over the host alone
// (so the path, the key, is part of the signature), living URLLifetime.
func checkOneObjectURL(t *testing.T, bucket *objectstore.Bucket, up uploadBody) {
	t.Helper()
	u, err := url.Parse(up.UploadURL)
	if err != nil {
		t.Fatal(err)
	}
	key, err := objectstore.KeyOf(bucket.Name, up.UploadURL)
	if err != nil || key != up.ObjectKey || u.Path != "/"+bucket.Name+"/"+up.ObjectKey {
		t.Fatalf("URL %s names %q, want the key %q only", up.UploadURL, key, up.ObjectKey)
	}
	q := u.Query()
	if q.Get("X-Amz-Expires") != "900" || q.Get("X-Amz-SignedHeaders") != "host" || q.Get("X-Amz-Signature") == "" ||
		q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" || !strings.Contains(q.Get("X-Amz-Credential"), "/s3/aws4_request") {
		t.Fatalf("URL query %v", q)
	}
	if d := time.Until(up.ExpiresAt); d <= 0 || d > etcdsnapshot.URLLifetime+time.Minute {
		t.Fatalf("expires in %s", d)
	}
	// Signed for this key: presigning another key signs another path, so
	// this signature is not that URL's.
	other, _, err := bucket.PresignPut(context.Background(), up.ObjectKey+".other", etcdsnapshot.URLLifetime)
	if err != nil {
		t.Fatal(err)
	}
	ou, _ := url.Parse(other)
	if ou.Query().Get("X-Amz-Signature") == q.Get("X-Amz-Signature") {
		t.Fatal("two keys, one signature")
	}
}

// A VM of another cluster (of the same org, with every proof) gets no URL
// for a snapshot of a cluster it is no node of, and cannot report one.
// The node a pending snapshot was handed to is told so in the answer to
// its health report, and takes it at once (its health script starts the
// snapshot service) instead of at its snapshot timer's next ask, minutes
// away: an upgrade waits on that snapshot before its first node moves.
// Another node is told nothing, and nothing is said once it is taken.
func TestEtcdSnapshotIsToldToItsNodeAtItsHealthReport(t *testing.T) {
	s, _ := snapshotStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	chosen, other := s.proof(res.ControlPlaneVMIDs[0]), s.proof(res.ControlPlaneVMIDs[1])
	for _, vm := range []vmProof{chosen, other} {
		s.FetchBundle(vm.id, vm.imds, vm.access)
		s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	}
	told := func(vm vmProof) string {
		t.Helper()
		r := s.VMCall(http.MethodPost, bundle.HealthPathTemplate, vm.id, vm.imds, vm.access, cpHealthy)
		if r.Status != http.StatusNoContent {
			t.Fatalf("health report of vm %d = %d %s", vm.id, r.Status, r.Body)
		}
		return r.Header.Get(bundle.SnapshotHeader)
	}
	if got := told(chosen); got != "" {
		t.Fatalf("with no snapshot pending the node is told %q", got)
	}
	r := s.takeSnapshot(1, res.ClusterID)
	var taken snapshotItem
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST etcd-snapshots = %d %s", r.Status, r.Body)
	}
	r.JSON(t, &taken)
	if taken.NodeVMID != chosen.id {
		t.Fatalf("the snapshot went to vm %d, want %d", taken.NodeVMID, chosen.id)
	}
	if got := told(chosen); got != bundle.SnapshotDue {
		t.Errorf("the chosen node is told %q, want %q", got, bundle.SnapshotDue)
	}
	if got := told(other); got != "" {
		t.Errorf("the node not chosen is told %q, want nothing", got)
	}
	// Taken and reported: nothing more to tell.
	up := s.askSnapshot(chosen)
	var ask uploadBody
	up.JSON(t, &ask)
	body := []byte("etcd snapshot bytes")
	if code := put(t, ask.UploadURL, body); code != http.StatusOK {
		t.Fatalf("PUT to the presigned URL: %d", code)
	}
	sum := sha256.Sum256(body)
	rep := `{"id":` + itoa(ask.ID) + `,"size_bytes":` + itoa(int64(len(body))) + `,"sha256":"` + hex.EncodeToString(sum[:]) + `"}`
	if r := s.reportSnapshot(chosen, rep); r.Status != http.StatusOK {
		t.Fatalf("snapshot report = %d %s", r.Status, r.Body)
	}
	if got := told(chosen); got != "" {
		t.Errorf("after its snapshot was reported the node is told %q", got)
	}
}

func TestEtcdSnapshotOtherClustersVM(t *testing.T) {
	s, _ := snapshotStack(t)
	id, vm := s.readyNode(t)
	other := s.Found(1, stacktest.ThreeNodes)
	stranger := s.proof(other.ControlPlaneVMIDs[0])
	var taken snapshotItem
	if r := s.takeSnapshot(1, id); r.Status != http.StatusAccepted {
		t.Fatalf("take: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &taken)
	}
	if taken.NodeVMID != vm.id {
		t.Fatalf("chosen vm %d, want the Ready %d", taken.NodeVMID, vm.id)
	}
	if r := s.askSnapshot(stranger); r.Status != http.StatusNoContent {
		t.Fatalf("another cluster's VM asks: %d %s", r.Status, r.Body)
	}
	rep := `{"id":` + itoa(taken.ID) + `,"size_bytes":1,"sha256":"` + strings.Repeat("a", 64) + `"}`
	if r := s.reportSnapshot(stranger, rep); r.Status != http.StatusNotFound {
		t.Fatalf("another cluster's VM reports: %d %s", r.Status, r.Body)
	}
	// A VM's proofs on a path naming another VM: refused by the proofs.
	forged := vmProof{id: vm.id, imds: stranger.imds, access: stranger.access}
	if r := s.askSnapshot(forged); r.Status != http.StatusForbidden && r.Status != http.StatusUnauthorized {
		t.Fatalf("forged VM asks: %d %s", r.Status, r.Body)
	}
	// An operator's token is no VM's.
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/etcd-snapshot", "", s.Bearer(1))
	if r.Status < 400 || r.Status >= 500 {
		t.Fatalf("operator asks as a VM: %d %s", r.Status, r.Body)
	}
}

// Bad reports are clear 4xx and write nothing; a node's reported failure
// is recorded as failed; an object store that cannot be reached is a 503
// and the snapshot stays pending.
func TestEtcdSnapshotReports(t *testing.T) {
	s, _ := snapshotStack(t)
	id, vm := s.readyNode(t)
	var taken snapshotItem
	s.takeSnapshot(1, id).JSON(t, &taken)
	sid := itoa(taken.ID)
	for _, c := range []struct{ body, code string }{
		{`{}`, "invalid_field"},
		{`{"id":` + sid + `,"size_bytes":0,"sha256":"` + strings.Repeat("a", 64) + `"}`, "invalid_field"},
		{`{"id":` + sid + `,"size_bytes":10,"sha256":"XYZ"}`, "invalid_field"},
		{`{"id":` + sid + `,"size_bytes":10}`, "invalid_field"},
		{`{"id":` + sid + `,"error":"x","size_bytes":10}`, "invalid_field"},
		{`{"id":` + sid + `,"error":"` + strings.Repeat("e", 1001) + `"}`, "invalid_field"},
		{`{"id":` + sid + `,"bogus":1}`, "invalid_field"},
		{`not json`, "invalid_json"},
	} {
		if r := s.reportSnapshot(vm, c.body); r.Status != http.StatusBadRequest || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want 400 %s", c.body, r.Status, r.Body, c.code)
		}
	}
	if got := s.snapshots(1, id); got[0].State != "pending" {
		t.Fatalf("after bad reports: %+v", got[0])
	}
	if r := s.reportSnapshot(vm, `{"id":`+sid+`,"error":"etcdctl: context deadline exceeded"}`); r.Status != http.StatusOK {
		t.Fatalf("failure report: %d %s", r.Status, r.Body)
	}
	got := s.snapshots(1, id)[0]
	if got.State != "failed" || got.Failure == nil || *got.Failure != "etcdctl: context deadline exceeded" || got.SizeBytes != nil {
		t.Fatalf("after a failure report: %+v", got)
	}
}

// The object store down: the URL is still issued (presigning is local),
// but a report cannot be checked: 503 storage_unavailable, still pending.
func TestEtcdSnapshotStorageDown(t *testing.T) {
	name, cfg := testenvBucket(t)
	cfg.BaseEndpoint = awsString("http://127.0.0.1:1") // nothing listens
	s := newStack(t, func(c *stacktest.Config) { c.SnapshotBucket = &objectstore.Bucket{AWS: cfg, Name: name} })
	id, vm := s.readyNode(t)
	var taken snapshotItem
	s.takeSnapshot(1, id).JSON(t, &taken)
	if r := s.askSnapshot(vm); r.Status != http.StatusOK {
		t.Fatalf("ask: %d %s", r.Status, r.Body)
	}
	rep := `{"id":` + itoa(taken.ID) + `,"size_bytes":10,"sha256":"` + strings.Repeat("a", 64) + `"}`
	if r := s.reportSnapshot(vm, rep); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "storage_unavailable" {
		t.Fatalf("report with S3 down: %d %s", r.Status, r.Body)
	}
	if got := s.snapshots(1, id)[0]; got.State != "pending" || got.FinishedAt != nil {
		t.Fatalf("after S3 down: %+v", got)
	}
}

// The schedule records one scheduled snapshot per cluster whose newest is
// older than its interval, on the chosen node, not twice while pending;
// fails the snapshot nobody reported within the deadline.
func TestEtcdSnapshotSchedule(t *testing.T) {
	s := newStack(t)
	in := s.schedule
	// Time passes for the snapshots, not for the tokens: every snapshot
	// is made older by d, and every cluster's next scheduled one due d
	// sooner.
	age := func(d time.Duration) {
		t.Helper()
		for _, aging := range []string{`UPDATE etcd_snapshots SET requested_at = requested_at - $1::interval`,
			`UPDATE kube_clusters SET next_snapshot_at = next_snapshot_at - $1::interval`} {
			if _, err := s.pool.Exec(context.Background(), aging, d.String()); err != nil {
				t.Fatal(err)
			}
		}
	}
	id, vm := s.readyNode(t)
	notReady := s.Found(1, stacktest.ThreeNodes).ClusterID

	rep, err := in.Run(context.Background())
	if err != nil || rep.Scheduled != 1 || rep.NoNode != 1 {
		t.Fatalf("first run: %+v %v", rep, err)
	}
	list := s.snapshots(1, id)
	if len(list) != 1 || list[0].Trigger != "scheduled" || list[0].RequestedBy != etcdsnapshot.ScheduledBy || list[0].NodeVMID != vm.id {
		t.Fatalf("scheduled: %+v", list)
	}
	if got := s.snapshots(1, notReady); len(got) != 0 {
		t.Fatalf("a cluster with no Ready node: %+v", got)
	}
	if rep, err := in.Run(context.Background()); err != nil || rep.Scheduled != 0 {
		t.Fatalf("second run while pending: %+v %v", rep, err)
	}
	// An hour and more later: the pending one is overdue and failed, and a
	// new one is asked for.
	age(etcdsnapshot.ReportDeadline + time.Minute)
	rep, err = in.Run(context.Background())
	if err != nil || rep.Overdue != 1 || rep.Scheduled != 1 {
		t.Fatalf("after the deadline: %+v %v", rep, err)
	}
	list = s.snapshots(1, id)
	if len(list) != 2 || list[0].State != "pending" || list[1].State != "failed" || *list[1].Failure != etcdsnapshot.OverdueFailure {
		t.Fatalf("after the deadline: %+v", list)
	}
	// The schedule off: nothing asked for.
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET etcd_snapshot_interval_seconds = 0`); err != nil {
		t.Fatal(err)
	}
	age(2 * etcdsnapshot.ReportDeadline)
	if rep, err := in.Run(context.Background()); err != nil || rep.Scheduled != 0 || rep.Overdue != 1 {
		t.Fatalf("schedule off: %+v %v", rep, err)
	}
}

func testenvBucket(t *testing.T) (string, aws.Config) { return testenv.SnapshotBucket(t) }

func awsString(s string) *string { return &s }

// The CLI asks for a snapshot and lists it, over the real routes; an
// error of the API is its exit 1 with the API's code.
func TestCLIEtcdSnapshots(t *testing.T) {
	s, _ := snapshotStack(t)
	id, vm := s.readyNode(t)
	code, out, errOut := s.k8sapiCLI("etcd-snapshots", "create", itoa(id))
	if code != 0 || !strings.Contains(out, "pending, taken by vm "+itoa(vm.id)+" into etcd-snapshots/"+itoa(id)+"/") {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.k8sapiCLI("etcd-snapshots", "create", itoa(id))
	if code != 1 || !strings.Contains(errOut, "etcd_snapshot_in_progress") {
		t.Fatalf("second create: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.k8sapiCLI("etcd-snapshots", "list", itoa(id), "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "pending") ||
		!strings.Contains(lines[1], "on_demand") || !strings.Contains(lines[1], "org:1:token:") {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	code, out, _ = s.k8sapiCLI("etcd-snapshots", "list", itoa(id), "-o", "json")
	var doc struct {
		Snapshots []snapshotItem `json:"snapshots"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Snapshots) != 1 {
		t.Fatalf("list -o json: %d %q", code, out)
	}
}

// Asking for a snapshot moves the cluster's next_snapshot_at to its
// interval after it, and the schedule walks only the clusters whose
// next_snapshot_at has come (migration 027): a cluster whose snapshots say
// it is due but whose next_snapshot_at has not come is not asked.
func TestScheduleReadsNextSnapshotAt(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	id, _ := s.readyNode(t)
	if rep, err := s.schedule.Run(ctx); err != nil || rep.Scheduled != 1 {
		t.Fatalf("first run: %+v %v", rep, err)
	}
	var next, want time.Time
	if err := s.pool.QueryRow(ctx, `SELECT k.next_snapshot_at, max(s.requested_at) + k.etcd_snapshot_interval_seconds * interval '1 second'
		FROM kube_clusters k JOIN etcd_snapshots s ON s.kube_cluster_id = k.id WHERE k.id = $1 GROUP BY k.id`, id).Scan(&next, &want); err != nil {
		t.Fatal(err)
	}
	if !next.Equal(want) {
		t.Errorf("next_snapshot_at = %v, want the snapshot's requested_at + its interval (%v)", next, want)
	}
	for _, q := range []string{`UPDATE etcd_snapshots SET requested_at = requested_at - interval '3 hours'`,
		`UPDATE kube_clusters SET next_snapshot_at = 'infinity'`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := s.schedule.Run(ctx); err != nil || rep.Overdue != 1 || rep.Scheduled != 0 {
		t.Errorf("a cluster whose next_snapshot_at has not come: %+v %v, want its overdue one failed and none asked", rep, err)
	}
}
