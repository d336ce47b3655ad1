package simulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

const org1, org2 = 101, 202

// env is one simulator over a fresh database, served over real HTTP.
type env struct {
	sim  *simulator.Simulator
	srv  *httptest.Server
	db   *pgxpool.Pool
	clk  *clock
	ctx1 context.Context // org1's token
	ctx2 context.Context // org2's token
	cc   *compute.HTTPClient
	dc   *dns.HTTPClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := &env{db: db, clk: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}}
	e.sim, err = simulator.New(simulator.Config{DB: db, Now: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.sim.Handler())
	t.Cleanup(e.srv.Close)
	e.ctx1 = platformauth.WithToken(ctx, e.token(t, org1, "principal", time.Hour))
	e.ctx2 = platformauth.WithToken(ctx, e.token(t, org2, "principal", time.Hour))
	e.cc = compute.NewHTTP(e.srv.URL+"/compute", e.srv.Client())
	e.dc = dns.NewHTTP(e.srv.URL+"/dns", e.srv.Client())
	return e
}

// clock is the simulator's injected time; tests move it to expire tokens.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (e *env) token(t *testing.T, org int64, scope string, ttl time.Duration) string {
	t.Helper()
	tok, err := simulator.IssuePrincipalToken(context.Background(), e.db, org, scope, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func vm(name string) compute.Instance {
	return compute.Instance{
		Name: name, SubnetID: 1, ImageID: 1, InstanceType: "e2.medium",
		Tags: map[string]string{"role": "control-plane"}, Userdata: "#!/bin/bash\necho hi\n",
	}
}

// do sends a raw request and returns status, headers and body.
func (e *env) do(t *testing.T, method, path string, hdr map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func apiStatus(err error) int {
	var ae *compute.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func TestEveryResponseSaysItIsASimulator(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/", "/compute/v1/subnets/1", "/imds/1/token", "/_sim/instances", "/dns/v1/zones/z/records"} {
		_, h, _ := e.do(t, http.MethodGet, p, nil, "")
		if h.Get(simulator.Header) != "true" {
			t.Errorf("GET %s: %s = %q", p, simulator.Header, h.Get(simulator.Header))
		}
	}
}

func TestBearerTokens(t *testing.T) {
	e := newEnv(t)
	revoked := e.token(t, org1, "principal", time.Hour)
	if _, err := e.db.Exec(context.Background(), `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, simulator.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]string{
		"none":        nil,
		"not bearer":  {"Authorization": "Basic " + revoked},
		"empty":       {"Authorization": "Bearer "},
		"unknown":     bearer("deadbeef"),
		"expired":     bearer(e.token(t, org1, "principal", -time.Second)),
		"revoked":     bearer(revoked),
		"wrong scope": bearer(e.token(t, org1, "imds", time.Hour)),
	}
	for name, hdr := range cases {
		for _, p := range []string{"/compute/v1/subnets/1", "/dns/v1/zones/z/records"} {
			status, h, body := e.do(t, http.MethodGet, p, hdr, "")
			if status != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) || h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: GET %s = %d %s", name, p, status, body)
			}
		}
	}
	// And through the client: a 401 is an *APIError, not a transport error.
	_, err := e.cc.Subnet(platformauth.WithToken(context.Background(), "nope"), 1)
	if apiStatus(err) != http.StatusUnauthorized {
		t.Errorf("client with a bad token: %v", err)
	}
}

func TestSubnet(t *testing.T) {
	e := newEnv(t)
	sn, err := e.cc.Subnet(e.ctx1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (compute.Subnet{ID: 2, ZoneID: 1, CIDRv4: "10.0.2.0/24"}); sn != want {
		t.Errorf("Subnet(2) = %+v, want %+v", sn, want)
	}
	if _, err := e.cc.Subnet(e.ctx1, 99); !compute.IsNotFound(err) {
		t.Errorf("Subnet(99) err = %v, want not found", err)
	}
}

// Twenty concurrent creates in one subnet each get a distinct address of
// the subnet (and a distinct public address), and the rows say what was asked.
func TestConcurrentCreatesGetDistinctAddresses(t *testing.T) {
	e := newEnv(t)
	const n = 20
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := vm("cp")
			in.AllocatePublicIPv4 = true
			in.SecurityGroupIDs = []int64{7}
			in.RootVolumeSizeGiB = 30
			ids[i], errs[i] = e.cc.CreateInstance(e.ctx1, in)
		}()
	}
	wg.Wait()
	subnet := netip.MustParsePrefix("10.0.1.0/24")
	pool := netip.MustParsePrefix(simulator.PublicIPv4Pool)
	seen4, seenPub := map[string]bool{}, map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		info, err := e.cc.GetInstance(e.ctx1, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		a := netip.MustParseAddr(info.IPv4)
		if !subnet.Contains(a) || a == netip.MustParseAddr("10.0.1.0") || a == netip.MustParseAddr("10.0.1.1") {
			t.Errorf("vm %d got %s, outside the subnet's hosts", ids[i], a)
		}
		if !pool.Contains(netip.MustParseAddr(info.PublicIPv4)) {
			t.Errorf("vm %d public %s outside %s", ids[i], info.PublicIPv4, pool)
		}
		if seen4[info.IPv4] || seenPub[info.PublicIPv4] {
			t.Errorf("vm %d reuses %s / %s", ids[i], info.IPv4, info.PublicIPv4)
		}
		seen4[info.IPv4], seenPub[info.PublicIPv4] = true, true
		if info.Name != "cp" || info.State != "running" {
			t.Errorf("vm %d: %+v", ids[i], info)
		}
	}
	var org, rootGiB, count int64
	var role, userdata string
	var sgs []int64
	err := e.db.QueryRow(context.Background(),
		`SELECT org_id, role, userdata, root_volume_size_gib, security_group_ids, (SELECT count(*) FROM vms)
		 FROM vms WHERE id = $1`, ids[0]).Scan(&org, &role, &userdata, &rootGiB, &sgs, &count)
	if err != nil {
		t.Fatal(err)
	}
	if org != org1 || role != "control-plane" || userdata != vm("").Userdata || rootGiB != 30 || len(sgs) != 1 || sgs[0] != 7 || count != n {
		t.Errorf("row: org=%d role=%q userdata=%q root=%d sgs=%v count=%d", org, role, userdata, rootGiB, sgs, count)
	}
}

func TestDeleteFreesAddressAndIsIdempotent(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx1
	a, err := e.cc.CreateInstance(ctx, vm("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.cc.CreateInstance(ctx, vm("b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := simulator.IssueIMDSToken(ctx, e.db, a, time.Hour); err != nil {
		t.Fatal(err)
	}
	infoA, _ := e.cc.GetInstance(ctx, a)
	infoB, _ := e.cc.GetInstance(ctx, b)
	if infoA.IPv4 != "10.0.1.2" || infoB.IPv4 != "10.0.1.3" {
		t.Fatalf("addresses %s, %s; want 10.0.1.2, 10.0.1.3", infoA.IPv4, infoB.IPv4)
	}

	if err := e.cc.DeleteInstance(ctx, a); err != nil {
		t.Fatal(err)
	}
	var state string
	var deleted bool
	var ifaces, tokens int
	err = e.db.QueryRow(ctx, `SELECT state, deleted_at IS NOT NULL,
		(SELECT count(*) FROM interfaces WHERE vm_id = $1), (SELECT count(*) FROM imds_tokens WHERE vm_id = $1)
		FROM vms WHERE id = $1`, a).Scan(&state, &deleted, &ifaces, &tokens)
	if err != nil {
		t.Fatal(err)
	}
	if state != "deleted" || !deleted || ifaces != 0 || tokens != 0 {
		t.Errorf("after delete: state=%s deleted=%v interfaces=%d imds tokens=%d", state, deleted, ifaces, tokens)
	}
	if _, err := e.cc.GetInstance(ctx, a); !compute.IsNotFound(err) {
		t.Errorf("GetInstance(deleted) err = %v, want not found", err)
	}
	if err := e.cc.DeleteInstance(ctx, a); err != nil {
		t.Errorf("second delete: %v, want nil (idempotent)", err)
	}
	if status, _, _ := e.do(t, http.MethodGet, "/imds/"+itoa(a)+"/token", nil, ""); status != http.StatusNotFound {
		t.Errorf("imds token for a deleted vm: %d, want 404", status)
	}

	c, err := e.cc.CreateInstance(ctx, vm("c"))
	if err != nil {
		t.Fatal(err)
	}
	infoC, _ := e.cc.GetInstance(ctx, c)
	if infoC.IPv4 != "10.0.1.2" {
		t.Errorf("after delete, next address = %s, want the freed 10.0.1.2", infoC.IPv4)
	}
	live, err := e.sim.LiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || live[0].ID != b || live[1].ID != c {
		t.Errorf("live = %+v, want b and c", live)
	}
}

func TestAnotherOrgsObjectsAreNotFound(t *testing.T) {
	e := newEnv(t)
	id, err := e.cc.CreateInstance(e.ctx1, vm("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cc.GetInstance(e.ctx2, id); !compute.IsNotFound(err) {
		t.Errorf("org2 GetInstance(org1's) err = %v, want not found", err)
	}
	tok2 := e.token(t, org2, "principal", time.Hour)
	if status, _, _ := e.do(t, http.MethodDelete, "/compute/v1/instances/"+itoa(id), bearer(tok2), ""); status != http.StatusNotFound {
		t.Errorf("org2 DELETE org1's vm: %d, want 404", status)
	}
	if _, err := e.cc.GetInstance(e.ctx1, id); err != nil {
		t.Errorf("org1's vm after org2's delete: %v", err)
	}

	sg, err := e.cc.CreateSecurityGroup(e.ctx1, compute.SecurityGroup{Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.cc.CreateSecurityGroupRule(e.ctx2, compute.Rule{SecurityGroupID: sg, IsIngress: true, Protocol: "ANY", PortRange: "ANY", CIDR: "0.0.0.0/0"})
	if !compute.IsNotFound(err) {
		t.Errorf("org2 rule in org1's group: %v, want not found", err)
	}
	in := vm("x")
	in.SecurityGroupIDs = []int64{sg}
	if _, err := e.cc.CreateInstance(e.ctx2, in); apiStatus(err) != http.StatusBadRequest {
		t.Errorf("org2 vm in org1's group: %v, want 400", err)
	}
	if status, _, _ := e.do(t, http.MethodDelete, "/compute/v1/security-groups/"+itoa(sg), bearer(tok2), ""); status != http.StatusNotFound {
		t.Errorf("org2 DELETE org1's group: %d, want 404", status)
	}
	tok1 := e.token(t, org1, "principal", time.Hour)
	if status, _, _ := e.do(t, http.MethodDelete, "/compute/v1/security-groups/"+itoa(sg), bearer(tok1), ""); status != http.StatusNoContent {
		t.Errorf("org1 DELETE own group: %d, want 204", status)
	}
}

func TestSecurityGroupRules(t *testing.T) {
	e := newEnv(t)
	sg, err := e.cc.CreateSecurityGroup(e.ctx1, compute.SecurityGroup{Name: "exk8s", Description: "control plane"})
	if err != nil {
		t.Fatal(err)
	}
	good := []compute.Rule{
		{SecurityGroupID: sg, IsIngress: true, Protocol: compute.ProtocolAny, PortRange: compute.PortRangeAny, CIDR: "10.0.1.0/24"},
		{SecurityGroupID: sg, IsIngress: true, Protocol: compute.ProtocolTCPv4, PortRange: "6443", CIDR: "0.0.0.0/0"},
		{SecurityGroupID: sg, IsIngress: true, Protocol: compute.ProtocolTCPv4, PortRange: "30000-32767", CIDR: "0.0.0.0/0"},
	}
	for _, r := range good {
		if _, err := e.cc.CreateSecurityGroupRule(e.ctx1, r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := []compute.Rule{
		{SecurityGroupID: sg, Protocol: "tcp", PortRange: "ANY", CIDR: "0.0.0.0/0"},
		{SecurityGroupID: sg, Protocol: "ANY", PortRange: "70000", CIDR: "0.0.0.0/0"},
		{SecurityGroupID: sg, Protocol: "ANY", PortRange: "20-10", CIDR: "0.0.0.0/0"},
		{SecurityGroupID: sg, Protocol: "ANY", PortRange: "ANY", CIDR: "10.0.1.0"},
	}
	for _, r := range bad {
		if _, err := e.cc.CreateSecurityGroupRule(e.ctx1, r); apiStatus(err) != http.StatusBadRequest {
			t.Errorf("%+v: err = %v, want 400", r, err)
		}
	}
	if err := e.cc.DeleteSecurityGroup(e.ctx1, sg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cc.CreateSecurityGroupRule(e.ctx1, good[0]); !compute.IsNotFound(err) {
		t.Errorf("rule in a deleted group: %v, want not found", err)
	}
}

func TestCreateInstanceRefusals(t *testing.T) {
	e := newEnv(t)
	cases := map[string]func(*compute.Instance){
		"no name":           func(in *compute.Instance) { in.Name = "" },
		"no image":          func(in *compute.Instance) { in.ImageID = 0 },
		"no type":           func(in *compute.Instance) { in.InstanceType = "" },
		"bad subnet":        func(in *compute.Instance) { in.SubnetID = 99 },
		"wrong zone":        func(in *compute.Instance) { in.ZoneID = 2 },
		"negative sg":       func(in *compute.Instance) { in.SecurityGroupIDs = []int64{-1} },
		"default root size": func(in *compute.Instance) { in.RootVolumeSizeGiB = 0 }, // control: allowed
	}
	for name, mutate := range cases {
		in := vm("v")
		mutate(&in)
		_, err := e.cc.CreateInstance(e.ctx1, in)
		if name == "default root size" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if apiStatus(err) != http.StatusBadRequest {
			t.Errorf("%s: err = %v, want 400", name, err)
		}
	}
	// Unknown fields are refused, so a misspelt field cannot pass silently.
	status, _, body := e.do(t, http.MethodPost, "/compute/v1/instances", bearer(e.token(t, org1, "principal", time.Hour)),
		`{"name":"v","subnet_id":1,"image_id":1,"instance_type":"t","user_data":"x"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "user_data") {
		t.Errorf("unknown field: %d %s", status, body)
	}
}

func TestInjectedComputeFaults(t *testing.T) {
	e := newEnv(t)
	if status, _, body := e.do(t, http.MethodPost, "/_sim/faults", nil, `{"fail_instance_create_on": 2}`); status != http.StatusOK {
		t.Fatalf("set faults: %d %s", status, body)
	}
	var results []int
	for i := range 3 {
		_, err := e.cc.CreateInstance(e.ctx1, vm("v"+itoa(int64(i))))
		results = append(results, apiStatus(err))
	}
	if results[0] != 0 || results[1] != http.StatusInternalServerError || results[2] != 0 {
		t.Errorf("three creates with fail_instance_create_on=2: statuses %v, want [0 500 0]", results)
	}
	live, _ := e.sim.LiveInstances(context.Background())
	if len(live) != 2 {
		t.Errorf("live vms = %d, want 2 (the failed create left nothing)", len(live))
	}

	e.do(t, http.MethodPost, "/_sim/faults", nil, `{"compute_latency_ms": 300}`)
	start := time.Now()
	if _, err := e.cc.Subnet(e.ctx1, 1); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("with 300ms latency: err=%v took %s", err, time.Since(start))
	}
	impatient := compute.NewHTTP(e.srv.URL+"/compute", &http.Client{Timeout: 50 * time.Millisecond})
	_, err := impatient.Subnet(e.ctx1, 1)
	if err == nil || apiStatus(err) != 0 {
		t.Errorf("a client timeout must be a transport error, got %v", err)
	}

	if status, _, _ := e.do(t, http.MethodDelete, "/_sim/faults", nil, ""); status != http.StatusNoContent {
		t.Fatalf("reset: %d", status)
	}
	_, _, body := e.do(t, http.MethodGet, "/_sim/faults", nil, "")
	var f simulator.Faults
	if err := json.Unmarshal([]byte(body), &f); err != nil || f != (simulator.Faults{}) {
		t.Errorf("faults after reset: %s", body)
	}
	if status, _, _ := e.do(t, http.MethodPost, "/_sim/faults", nil, `{"fail_everything": true}`); status != http.StatusBadRequest {
		t.Errorf("unknown fault accepted: %d", status)
	}
}

func TestDNS(t *testing.T) {
	e := newEnv(t)
	const zone = "k8s.excloud.test"
	if err := e.dc.UpsertA(e.ctx1, zone, "exk8s-1-a", "10.0.1.2", 60); err != nil {
		t.Fatal(err)
	}
	if err := e.dc.UpsertA(e.ctx1, zone, "exk8s-1-a", "10.0.1.3", 30); err != nil {
		t.Fatal(err)
	}
	if err := e.dc.UpsertA(e.ctx1, "other.test", "x", "10.0.0.9", 60); err != nil {
		t.Fatal(err)
	}
	recs, err := e.dc.Records(e.ctx1, zone)
	if err != nil {
		t.Fatal(err)
	}
	want := dns.Record{ZoneName: zone, Name: "exk8s-1-a", Type: "A", Value: "10.0.1.3", TTL: 30}
	if len(recs) != 1 || recs[0] != want {
		t.Errorf("records = %+v, want [%+v] (the upsert replaced)", recs, want)
	}
	_, _, body := e.do(t, http.MethodGet, "/_sim/dns", nil, "")
	var all dns.RecordList
	if err := json.Unmarshal([]byte(body), &all); err != nil || len(all.Records) != 2 {
		t.Errorf("GET /_sim/dns = %s", body)
	}

	e.do(t, http.MethodPost, "/_sim/faults", nil, `{"fail_dns": true}`)
	if err := e.dc.UpsertA(e.ctx1, zone, "n", "10.0.1.4", 60); apiStatus(err) != http.StatusInternalServerError {
		t.Errorf("upsert with fail_dns: %v, want 500", err)
	}
	if err := e.dc.DeleteA(e.ctx1, zone, "exk8s-1-a"); apiStatus(err) != http.StatusInternalServerError {
		t.Errorf("delete with fail_dns: %v, want 500", err)
	}
	e.do(t, http.MethodDelete, "/_sim/faults", nil, "")

	if err := e.dc.DeleteA(e.ctx1, zone, "exk8s-1-a"); err != nil {
		t.Fatal(err)
	}
	if err := e.dc.DeleteA(e.ctx1, zone, "exk8s-1-a"); err != nil {
		t.Errorf("second delete: %v, want nil (idempotent)", err)
	}
	if recs, _ := e.dc.Records(e.ctx1, zone); len(recs) != 0 {
		t.Errorf("records after delete: %+v", recs)
	}
}

// The IMDS flow of the bootstrap userdata shim: session token, node
// identity, access token; every token stored only as its hash.
func TestIMDSFlow(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id, err := e.cc.CreateInstance(e.ctx1, vm("cp-1"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.cc.CreateInstance(e.ctx1, vm("cp-2"))
	if err != nil {
		t.Fatal(err)
	}
	base := "/imds/" + itoa(id)

	status, h, imdsTok := e.do(t, http.MethodGet, base+"/token", nil, "")
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || len(imdsTok) != 64 {
		t.Fatalf("GET token: %d %q %q", status, h.Get("Content-Type"), imdsTok)
	}
	var vmID, orgID int64
	var expiry time.Time
	err = e.db.QueryRow(ctx, `SELECT vm_id, org_id, expiry_at FROM imds_tokens WHERE hash = $1`, simulator.HashToken(imdsTok)).Scan(&vmID, &orgID, &expiry)
	if err != nil {
		t.Fatalf("imds token hash not stored: %v", err)
	}
	if vmID != id || orgID != org1 || !expiry.Equal(e.clk.Now().Add(6*time.Hour)) {
		t.Errorf("imds token row: vm=%d org=%d expiry=%s (now %s)", vmID, orgID, expiry, e.clk.Now())
	}
	var plain int
	e.db.QueryRow(ctx, `SELECT count(*) FROM imds_tokens WHERE hash = $1`, imdsTok).Scan(&plain)
	if plain != 0 {
		t.Error("an imds token is stored in plaintext")
	}
	if status, _, put := e.do(t, http.MethodPut, base+"/token", nil, ""); status != http.StatusOK || put == imdsTok {
		t.Errorf("PUT token: %d, a new token each time: %v", status, put != imdsTok)
	}

	withTok := map[string]string{simulator.IMDSTokenHeader: imdsTok}
	status, _, body := e.do(t, http.MethodGet, base+"/latest/identity/node-identity", withTok, "")
	var ident struct {
		NodeID int64 `json:"node_id"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &ident) != nil || ident.NodeID != id {
		t.Errorf("node-identity: %d %s", status, body)
	}

	status, _, body = e.do(t, http.MethodGet, base+"/latest/identity/access-token", withTok, "")
	var acc struct {
		AccessToken string `json:"access_token"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &acc) != nil || acc.AccessToken == "" {
		t.Fatalf("access-token: %d %s", status, body)
	}
	var scope, descr string
	var expires time.Time
	err = e.db.QueryRow(ctx, `SELECT org_id, scope, description, expires_at FROM principal_tokens WHERE hash = $1`,
		simulator.HashToken(acc.AccessToken)).Scan(&orgID, &scope, &descr, &expires)
	if err != nil {
		t.Fatalf("access token hash not stored: %v", err)
	}
	if orgID != org1 || scope != "principal" || descr != "vm "+itoa(id)+" bootstrap" || !expires.Equal(e.clk.Now().Add(time.Hour)) {
		t.Errorf("access token row: org=%d scope=%s descr=%q expires=%s", orgID, scope, descr, expires)
	}
	// The access token is a working bearer token of the VM's org.
	if _, err := e.cc.GetInstance(platformauth.WithToken(ctx, acc.AccessToken), id); err != nil {
		t.Errorf("access token does not authenticate: %v", err)
	}

	// Refusals: no token, another VM's path, garbage, expired, unknown VM.
	refused := []struct {
		name, path string
		hdr        map[string]string
		want       int
	}{
		{"no token", base + "/latest/identity/node-identity", nil, 401},
		{"other vm's path", "/imds/" + itoa(other) + "/latest/identity/node-identity", withTok, 401},
		{"other vm's path, access", "/imds/" + itoa(other) + "/latest/identity/access-token", withTok, 401},
		{"garbage", base + "/latest/identity/access-token", map[string]string{simulator.IMDSTokenHeader: "x"}, 401},
		{"unknown vm", "/imds/999999/token", nil, 404},
		{"non-numeric vm", "/imds/abc/token", nil, 404},
		{"zero vm", "/imds/0/token", nil, 404},
	}
	for _, c := range refused {
		if status, _, body := e.do(t, http.MethodGet, c.path, c.hdr, ""); status != c.want || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.want)
		}
	}
	e.clk.Advance(6*time.Hour + time.Second) // the session has expired
	if status, _, _ := e.do(t, http.MethodGet, base+"/latest/identity/node-identity", withTok, ""); status != 401 {
		t.Errorf("expired imds token: %d, want 401", status)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
