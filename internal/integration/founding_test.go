package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

func TestFoundThreeNodeCluster(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)

	if len(res.ControlPlaneVMIDs) != 3 {
		t.Fatalf("vm ids = %v", res.ControlPlaneVMIDs)
	}
	wantName := fmt.Sprintf("exk8s-1-%x", res.ClusterID)
	if res.Name != wantName || res.ControlPlaneDNSName != wantName+"."+baseDomain {
		t.Errorf("names = %q, %q", res.Name, res.ControlPlaneDNSName)
	}
	if res.ServiceCIDR != "10.96.0.0/12" || res.PodCIDR != "172.16.0.0/12" || !res.DNSConfigured ||
		res.BootstrapPathTemplate != "/bootstrap/control-plane/{vm_id}" || res.IngressWildcardDNS != "*."+res.ControlPlaneDNSName ||
		len(res.SuggestedDNSRecords) != 3 || res.KeyAlgorithm != "ecdsa-p256" || res.CNI != "cilium" {
		t.Errorf("response fields: %+v", res)
	}

	// The admin kubeconfig loads with client-go and names the shared endpoint
	// and an identity of who asked in k8sapi's cluster-admins group (never
	// system:masters), signed by the cluster CA
	// (kubeconfig_test.go holds every admin kubeconfig to the rest).
	cfg, err := clientcmd.Load([]byte(res.Kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if restCfg.Host != "https://"+res.ControlPlaneDNSName+":6443" {
		t.Errorf("server = %s", restCfg.Host)
	}
	cert, err := pki.ParseCert(restCfg.CertData)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "k8sapi:"+auth.NewPrincipal(1, 0, s.Token(1)).Who() || !slices.Equal(cert.Subject.Organization, []string{pki.ClusterAdminsGroup}) {
		t.Errorf("admin subject = %v", cert.Subject)
	}

	// The DNS record is the first suggested record, and the VMs carry the shim.
	recs := s.sim.Records(baseDomain)
	if first := res.SuggestedDNSRecords[0]; len(recs) != 1 || recs[0].Name != res.ControlPlaneDNSName ||
		recs[0].Value != first.Value || recs[0].TTL != clusterfacts.DNSRecordTTL || first.TTL != clusterfacts.DNSRecordTTL {
		t.Errorf("dns records = %+v", recs)
	}
	var userdata, role string
	if err := s.pool.QueryRow(context.Background(), `SELECT userdata, role FROM vms WHERE id = $1`, res.ControlPlaneVMIDs[0]).Scan(&userdata, &role); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(userdata, "#!/usr/bin/env bash") || !strings.Contains(userdata, "https://k8sapi.test.excloud") || role != "control-plane" {
		t.Errorf("vm userdata/role = %q... %q", userdata[:min(40, len(userdata))], role)
	}
	assertNoPlaintextKeys(t, s)
}

func TestRSAClusterOnRequest(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"key_algorithm":"rsa-2048"}`)
	if res.KeyAlgorithm != "rsa-2048" {
		t.Fatalf("key_algorithm = %q", res.KeyAlgorithm)
	}
	cfg, _ := clientcmd.Load([]byte(res.Kubeconfig))
	for _, a := range cfg.AuthInfos {
		key, err := pki.ParseKey(a.ClientKeyData)
		if err != nil || fmt.Sprintf("%T", key) != "*rsa.PrivateKey" {
			t.Errorf("admin key %T, %v", key, err)
		}
	}
}

// assertNoPlaintextKeys scans every text and bytea column of every table.
func assertNoPlaintextKeys(t *testing.T, s *stack) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type IN ('text', 'bytea', 'character varying')`)
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ table, column, typ string }
	var cols []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.column, &c.typ); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if len(cols) < 10 {
		t.Fatalf("scanned only %d columns", len(cols))
	}
	for _, c := range cols {
		needle := `'PRIVATE KEY'`
		if c.typ == "bytea" {
			needle = `'PRIVATE KEY'::bytea`
		}
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %q WHERE position(%s in %q) > 0`, c.table, needle, c.column)
		if err := s.pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("scanning %s.%s: %v", c.table, c.column, err)
		}
		if n > 0 {
			t.Errorf("%s.%s holds %d plaintext private keys", c.table, c.column, n)
		}
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	s := newStack(t)
	cases := []struct {
		name, body string
		status     int
		mentions   string
	}{
		{"count too high", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":4}`, 400, "control_plane_count: must be 1 or 3"},
		{"count zero", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":0}`, 400, "control_plane_count"},
		{"image missing", `{"control_plane_instance_type":"e2.medium","subnet_id":1}`, 400, "control_plane_image_id: is required"},
		{"image negative", `{"control_plane_image_id":-3,"control_plane_instance_type":"e2.medium","subnet_id":1}`, 400, "control_plane_image_id: must be a positive integer"},
		{"type missing", `{"control_plane_image_id":1,"subnet_id":1}`, 400, "control_plane_instance_type: is required"},
		{"subnet missing", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium"}`, 400, "subnet_id: is required"},
		{"no such subnet", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":999}`, 400, "subnet_id: no such subnet"},
		{"no such image", `{"control_plane_image_id":999,"control_plane_instance_type":"e2.medium","subnet_id":1}`, 400, "control_plane_image_id: no such image"},
		{"no such instance type", `{"control_plane_image_id":1,"control_plane_instance_type":"x9.huge","subnet_id":1}`, 400, "control_plane_instance_type: no such instance type"},
		{"bad sg", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"security_group_ids":[0]}`, 400, "security_group_ids[0]"},
		{"bad volume", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"root_volume_size_gib":1}`, 400, "root_volume_size_gib"},
		{"bad ssh key", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"ssh_pubkey":"hello"}`, 400, "ssh_pubkey"},
		{"bad algorithm", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"key_algorithm":"dsa"}`, 400, "key_algorithm"},
		{"bad cni", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"cni":"calico"}`, 400, `cni: must be \"cilium\", \"bridge\" or \"flannel\"`},
		{"cni not a string", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"cni":true}`, 400, "cni"},
		{"org in body", `{"org_id":2,"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`, 400, "org_id"},
		{"wrong type", `{"control_plane_image_id":"one","control_plane_instance_type":"e2.medium","subnet_id":1}`, 400, "control_plane_image_id"},
		{"not json", `{`, 400, "JSON"},
		{"two objects", `{} {}`, 400, "one JSON object"},
		{"too large", `{"ssh_pubkey":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "exceeds"},
		{"every error at once", `{"control_plane_count":9}`, 400, "control_plane_count: must be 1 or 3 (etcd needs a majority: two members tolerate no more failures than one, and need both up); control_plane_image_id: is required; control_plane_instance_type: is required; subnet_id: is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", c.body, s.Bearer(1))
			if r.Status != c.status || !strings.Contains(string(r.Body), c.mentions) {
				t.Errorf("= %d %s, want %d mentioning %q", r.Status, r.Body, c.status, c.mentions)
			}
			r.ErrorCode(t)
		})
	}
	assertNothingFounded(t, s)
}

func assertNothingFounded(t *testing.T, s *stack) {
	t.Helper()
	var clusters, nodes int
	ctx := context.Background()
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM kube_clusters`).Scan(&clusters)
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM kube_nodes`).Scan(&nodes)
	live, err := s.sim.LiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clusters != 0 || nodes != 0 || len(live) != 0 {
		t.Errorf("left behind: %d clusters, %d nodes, %d live VMs", clusters, nodes, len(live))
	}
}

func TestCreateRefusesBadCredentials(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	expired, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", -1)
	other, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "api-key", 3600e9)
	revoked, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", 3600e9)
	if _, err := s.pool.Exec(ctx, `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, simulator.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		header string
		status int
	}{
		"no header":     {"", 401},
		"not bearer":    {"Basic dXNlcjpwYXNz", 401},
		"empty bearer":  {"Bearer ", 401},
		"unknown token": {"Bearer nope", 401},
		"expired":       {"Bearer " + expired, 401},
		"revoked":       {"Bearer " + revoked, 401},
		"wrong scope":   {"Bearer " + other, 403},
	} {
		r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, map[string]string{"Authorization": c.header})
		if r.Status != c.status {
			t.Errorf("%s: status %d %s, want %d", name, r.Status, r.Body, c.status)
		}
		r.ErrorCode(t)
	}
	assertNothingFounded(t, s)
}

func TestComputeFailureMidwayDeletesCreatedVMs(t *testing.T) {
	s := newStack(t)
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, s.Bearer(1))
	if r.Status != http.StatusBadGateway || r.ErrorCode(t) != "compute_failed" {
		t.Fatalf("= %d %s, want 502 compute_failed", r.Status, r.Body)
	}
	assertUndone(t, s, "compute_failed")
}

// assertUndone: the one cluster is failed with a reason naming code, its
// keys are shredded, and no VM of it is live (a VM whose create failed
// ambiguously was looked up by its token and deleted too).
func assertUndone(t *testing.T, s *stack, code string) {
	t.Helper()
	ctx := context.Background()
	var status, reason string
	var keyLen int
	if err := s.pool.QueryRow(ctx, `SELECT status, (SELECT o.message FROM operations o WHERE o.target_type = 'cluster' AND o.target_id = kube_clusters.id ORDER BY o.id DESC LIMIT 1), length(wrapped_data_key) FROM kube_clusters`).
		Scan(&status, &reason, &keyLen); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || !strings.HasPrefix(reason, code+": ") || keyLen != 0 {
		t.Errorf("cluster %s (%q), data key %d bytes; want failed, a reason naming %s, shredded", status, reason, keyLen, code)
	}
	if live, err := s.sim.LiveInstances(ctx); err != nil || len(live) != 0 {
		t.Errorf("live VMs after the undo: %v (err %v)", live, err)
	}
}

func TestDNSFailureIsSoft(t *testing.T) {
	s := newStack(t)
	s.sim.SetFaults(simulator.Faults{FailDNS: true})
	res := s.Found(1, stacktest.ThreeNodes)
	if res.DNSConfigured || res.DNSError == "" {
		t.Fatalf("dns_configured=%v dns_error=%q", res.DNSConfigured, res.DNSError)
	}
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", s.Bearer(1))
	if !strings.Contains(string(r.Body), `"dns_configured":false`) {
		t.Errorf("GET shows %s", r.Body)
	}
}

func TestIdempotencyKeyReturnsTheFirstCluster(t *testing.T) {
	s := newStack(t)
	h := s.Bearer(1)
	h["Idempotency-Key"] = "retry-me"
	first := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, h)
	second := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, h)
	if first.Status != 201 || second.Status != 201 || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("statuses %d, %d (replayed=%q)", first.Status, second.Status, second.Header.Get("Idempotent-Replayed"))
	}
	var a, b struct {
		ClusterID  int64   `json:"cluster_id"`
		VMs        []int64 `json:"control_plane_vm_ids"`
		Kubeconfig string  `json:"kubeconfig"`
	}
	first.JSON(t, &a)
	second.JSON(t, &b)
	if a.ClusterID != b.ClusterID || fmt.Sprint(a.VMs) != fmt.Sprint(b.VMs) || b.Kubeconfig == "" {
		t.Errorf("replay differs: %+v vs %+v", a.ClusterID, b.ClusterID)
	}
	var n int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM vms`).Scan(&n)
	if n != 3 {
		t.Errorf("%d VMs created, want 3", n)
	}
	// The same key with another body is a conflict, not a replay.
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", strings.Replace(stacktest.ThreeNodes, `"control_plane_count":3`, `"control_plane_count":1`, 1), h)
	if r.Status != http.StatusConflict || r.ErrorCode(t) != "idempotency_key_reused" {
		t.Errorf("= %d %s", r.Status, r.Body)
	}
}

func TestConcurrentCreatesForOneOrg(t *testing.T) {
	s := newStack(t)
	const n = 50
	ids := make(chan int64, n)
	var wg sync.WaitGroup
	h := s.Bearer(1)
	for range n {
		wg.Go(func() {
			r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters",
				`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`, h)
			if r.Status != http.StatusCreated {
				t.Errorf("= %d %s", r.Status, r.Body)
				return
			}
			var res struct {
				ClusterID int64 `json:"cluster_id"`
			}
			r.JSON(t, &res)
			ids <- res.ClusterID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	var names int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(DISTINCT name) FROM kube_clusters`).Scan(&names)
	if len(seen) != n || names != n {
		t.Errorf("%d distinct ids, %d distinct names, want %d", len(seen), names, n)
	}
	// Every cluster has its own VM and its own data key.
	var vms, keys int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(DISTINCT vm_id) FROM kube_nodes`).Scan(&vms)
	_ = s.pool.QueryRow(context.Background(), `SELECT count(DISTINCT wrapped_data_key) FROM kube_clusters`).Scan(&keys)
	if vms != n || keys != n {
		t.Errorf("%d distinct VMs, %d distinct data keys, want %d", vms, keys, n)
	}
}

func TestListGetDeleteAreOrgScoped(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	id := itoa(res.ClusterID)

	if r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", s.Bearer(2)); r.Status != 404 {
		t.Errorf("org 2 GET = %d", r.Status)
	}
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+id, "", s.Bearer(2)); r.Status != 404 {
		t.Errorf("org 2 DELETE = %d", r.Status)
	}
	if r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(2)); !strings.Contains(string(r.Body), `"clusters":[]`) {
		t.Errorf("org 2 list = %s", r.Body)
	}
	second := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1))
	var list struct {
		Clusters []struct {
			ID  int64   `json:"cluster_id"`
			VMs []int64 `json:"control_plane_vm_ids"`
		} `json:"clusters"`
	}
	r.JSON(t, &list)
	want := map[int64]string{res.ClusterID: fmt.Sprint(res.ControlPlaneVMIDs), second.ClusterID: fmt.Sprint(second.ControlPlaneVMIDs)}
	if r.Status != 200 || len(list.Clusters) != 2 {
		t.Fatalf("org 1 list = %d %s", r.Status, r.Body)
	}
	for _, c := range list.Clusters {
		if fmt.Sprint(c.VMs) != want[c.ID] {
			t.Errorf("cluster %d lists VMs %v, want %s", c.ID, c.VMs, want[c.ID])
		}
	}
	for _, bad := range []string{"0", "-1", "abc", "99999999999999999999", "1.5"} {
		if r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+bad, "", s.Bearer(1)); r.Status != 400 {
			t.Errorf("GET /clusters/%s = %d", bad, r.Status)
		}
	}

	r = stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+id, "", s.Bearer(1))
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"deleted"`) {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	// Only the other cluster's VM and record are left.
	live, _ := s.sim.LiveInstances(context.Background())
	recs := s.sim.Records(baseDomain)
	if len(live) != 1 || live[0].ID != second.ControlPlaneVMIDs[0] || len(recs) != 1 || recs[0].Name != second.ControlPlaneDNSName {
		t.Errorf("after delete: live VMs %+v, records %+v", live, recs)
	}
	assertShredded(t, s, res.ClusterID)
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+id, "", s.Bearer(1)); r.Status != 200 {
		t.Errorf("second DELETE = %d", r.Status)
	}
}

// assertShredded: a deleted cluster keeps neither its wrapped data key nor
// any node identity's sealed key.
func assertShredded(t *testing.T, s *stack, clusterID int64) {
	t.Helper()
	var wrapped []byte
	_ = s.pool.QueryRow(context.Background(), `SELECT wrapped_data_key FROM kube_clusters WHERE id = $1`, clusterID).Scan(&wrapped)
	if len(wrapped) != 0 {
		t.Error("the data key survived deletion")
	}
	var identities, sealed int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE length(i.key_sealed) > 0)
		FROM node_identities i JOIN kube_nodes n ON n.id = i.node_id WHERE n.kube_cluster_id = $1`, clusterID).Scan(&identities, &sealed)
	if identities == 0 || sealed != 0 {
		t.Errorf("after delete: %d of %d node identity keys still sealed", sealed, identities)
	}
}

// A founding undone after a compute fault leaves a failed cluster whose
// failed VM's create was sent; deleting it repeats that create to find what
// it made, which renders the VM's userdata in the clusters function too.
func TestDeleteOfAFailedClusterEndsItDeleted(t *testing.T) {
	s := newStack(t)
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, s.Bearer(1))
	if r.Status != http.StatusBadGateway {
		t.Fatalf("= %d %s, want 502", r.Status, r.Body)
	}
	s.sim.SetFaults(simulator.Faults{})
	var id int64
	if err := s.pool.QueryRow(context.Background(), `SELECT id FROM kube_clusters`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	r = stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"status":"deleted"`) {
		t.Fatalf("DELETE = %d %s, want 200 deleted", r.Status, r.Body)
	}
}
