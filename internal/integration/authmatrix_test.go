package integration

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// noRedirect sees exactly what a function answered: a redirect would be
// followed (with the Authorization header) by the default client.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authCase is one row of the matrix: a request to one function's own
// handler (as Lambda runs it) and the exact answer.
type authCase struct {
	name, method, path string
	headers            map[string]string
	body               string
	status             int
	code               string // the JSON error code; "" for a success
}

// refusedCaller is a bearer credential every principal route refuses.
type refusedCaller struct {
	name, authorization string
	status              int
	code                string
	vmToken             bool // a VM's token: refused on operator routes only
}

// TestAuthMatrixEveryRoute sends every hostile caller to every route, each
// function's handler on its own server, and checks the exact status, the
// JSON error code, and that no answer carries key material or a token.
// dryUpgrade is an upgrade's plan: it records nothing, whoever asks.
const dryUpgrade = `{"kubernetes_version":"v1.36.3","dry_run":true}`

func TestAuthMatrixEveryRoute(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	one := `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`
	c1 := s.Found(1, stacktest.ThreeNodes) // org 1's cluster, read and attacked
	c1del := s.Found(1, one)               // org 1's cluster the valid DELETE removes
	c2 := s.Found(2, one)                  // org 2's cluster
	vm1, vm2 := c1.ControlPlaneVMIDs[0], c1.ControlPlaneVMIDs[1]
	imds1, access1 := s.VMCredentials(vm1)
	imdsOrg2, accessOrg2 := s.VMCredentials(c2.ControlPlaneVMIDs[0])

	issue := func(org int64, scope string, ttl time.Duration) string {
		tok, err := simulator.IssuePrincipalToken(ctx, s.pool, org, scope, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid, validOrg2 := s.Token(1), s.Token(2)
	expired := issue(1, "principal", -time.Minute)
	wrongScope := issue(1, "api-key", time.Hour)
	revoked := issue(1, "principal", time.Hour)
	if _, err := s.pool.Exec(ctx, `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, simulator.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	expiredIMDS, err := simulator.IssueIMDSToken(ctx, s.pool, vm1, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// A token the platform issued to vm2 (a peer of vm1, same org).
	vmToken2, err := simulator.IssueVMToken(ctx, s.pool, 1, vm2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{valid, validOrg2, expired, wrongScope, revoked, imds1, access1, imdsOrg2, accessOrg2, expiredIMDS, vmToken2}

	// The callers every principal route must refuse.
	refused := []refusedCaller{
		{"no token", "", 401, "unauthenticated", false},
		{"basic scheme", "Basic dXNlcjpwYXNz", 401, "unauthenticated", false},
		{"bearer without token", "Bearer", 401, "unauthenticated", false},
		{"bearer blank", "Bearer   ", 401, "unauthenticated", false},
		{"token scheme", "Token " + valid, 401, "unauthenticated", false},
		{"no scheme", valid, 401, "unauthenticated", false},
		{"token with junk", "Bearer " + valid + " x", 401, "unauthenticated", false},
		{"oversized token", "Bearer " + strings.Repeat("a", 600), 401, "unauthenticated", false},
		{"unknown token", "Bearer forged-token", 401, "unauthenticated", false},
		{"expired", "Bearer " + expired, 401, "unauthenticated", false},
		{"revoked", "Bearer " + revoked, 401, "unauthenticated", false},
		{"wrong scope", "Bearer " + wrongScope, 403, "forbidden", false},
		{"IMDS session token as bearer", "Bearer " + imds1, 401, "unauthenticated", false},
		{"hash of a token as bearer", "Bearer " + simulator.HashToken(valid), 401, "unauthenticated", false},
		// A VM's token is for its bootstrap routes only: never an operator.
		{"VM token as operator", "Bearer " + access1, 403, "token_scope", true},
		{"other org's VM token as operator", "Bearer " + accessOrg2, 403, "token_scope", true},
	}
	id1, idDel, id2 := itoa(c1.ClusterID), itoa(c1del.ClusterID), itoa(c2.ClusterID)
	var cases []authCase
	nodePath := func(cluster string, vm int64, what string) string {
		return "/clusters/" + cluster + "/nodes/" + itoa(vm) + "/" + what
	}
	principalRoutes := []struct{ method, path, body string }{
		{"POST", "/clusters", one},
		{"GET", "/clusters", ""},
		{"GET", "/clusters/" + id1, ""},
		{"DELETE", "/clusters/" + id1, ""},
		{"GET", nodePath(id1, vm1, "bootstrap"), ""},
		{"POST", nodePath(id1, vm1, "rebootstrap"), ""},
		{"POST", "/clusters/" + id1 + "/kubeconfig", `{"ttl":"1h"}`},
		{"GET", "/clusters/" + id1 + "/kubeconfigs", ""},
		{"POST", "/clusters/" + id1 + "/credentials", credentialBody(t, signedCSR(t, newKey(t), &x509.CertificateRequest{}))},
		{"POST", "/clusters/" + id1 + "/upgrade", dryUpgrade},
		{"GET", "/clusters/" + id1 + "/upgrade", ""},
		{"POST", "/clusters/" + id1 + "/upgrade/resume", ""},
		{"POST", "/clusters/" + id1 + "/upgrade/abort", ""},
	}
	for _, r := range principalRoutes {
		for _, c := range refused {
			h := map[string]string{}
			if c.authorization != "" {
				h["Authorization"] = c.authorization
			}
			cases = append(cases, authCase{c.name, r.method, r.path, h, r.body, c.status, c.code})
		}
	}
	bearer1, bearer2 := map[string]string{"Authorization": "Bearer " + valid}, map[string]string{"Authorization": "Bearer " + validOrg2}
	cases = append(cases,
		authCase{"valid create", "POST", "/clusters", bearer1, one, 201, ""},
		authCase{"org_id in body", "POST", "/clusters", bearer2, `{"org_id":1,` + one[1:], 400, "invalid_field"},
		authCase{"valid list", "GET", "/clusters", bearer1, "", 200, ""},
		authCase{"valid get", "GET", "/clusters/" + id1, bearer1, "", 200, ""},
		authCase{"wrong org get", "GET", "/clusters/" + id1, bearer2, "", 404, "not_found"},
		authCase{"wrong org delete", "DELETE", "/clusters/" + id1, bearer2, "", 404, "not_found"},
		authCase{"org 2 gets its own", "GET", "/clusters/" + id2, bearer2, "", 200, ""},
		authCase{"org 1 gets org 2's", "GET", "/clusters/" + id2, bearer1, "", 404, "not_found"},
		authCase{"no such cluster", "GET", "/clusters/987654321", bearer1, "", 404, "not_found"},
		authCase{"valid delete", "DELETE", "/clusters/" + idDel, bearer1, "", 200, ""},
		authCase{"node bootstrap", "GET", nodePath(id1, vm1, "bootstrap"), bearer1, "", 200, ""},
		authCase{"node bootstrap other org", "GET", nodePath(id1, vm1, "bootstrap"), bearer2, "", 404, "not_found"},
		authCase{"node bootstrap VM of another cluster", "GET", nodePath(id1, c2.ControlPlaneVMIDs[0], "bootstrap"), bearer1, "", 404, "not_found"},
		authCase{"node bootstrap deleted cluster", "GET", nodePath(idDel, c1del.ControlPlaneVMIDs[0], "bootstrap"), bearer1, "", 404, "not_found"},
		authCase{"rebootstrap other org", "POST", nodePath(id1, vm1, "rebootstrap"), bearer2, "", 404, "not_found"},
		authCase{"rebootstrap org 2 by org 1", "POST", nodePath(id2, c2.ControlPlaneVMIDs[0], "rebootstrap"), bearer1, "", 404, "not_found"},
		authCase{"rebootstrap no such node", "POST", nodePath(id1, 987654321, "rebootstrap"), bearer1, "", 404, "not_found"},
		authCase{"rebootstrap deleted cluster", "POST", nodePath(idDel, c1del.ControlPlaneVMIDs[0], "rebootstrap"), bearer1, "", 404, "not_found"},
		authCase{"rebootstrap by the VM itself", "POST", nodePath(id1, vm1, "rebootstrap"), map[string]string{"Authorization": "Bearer " + access1, "X-exc-imds-token": imds1}, "", 403, "token_scope"},
		authCase{"rebootstrap by its operator", "POST", nodePath(id1, vm2, "rebootstrap"), bearer1, "", 200, ""},
		authCase{"kubeconfig by its operator", "POST", "/clusters/" + id1 + "/kubeconfig", bearer1, "", 201, ""},
		authCase{"kubeconfig other org", "POST", "/clusters/" + id1 + "/kubeconfig", bearer2, "", 404, "not_found"},
		authCase{"kubeconfig org 2 by org 1", "POST", "/clusters/" + id2 + "/kubeconfig", bearer1, "", 404, "not_found"},
		authCase{"kubeconfig no such cluster", "POST", "/clusters/987654321/kubeconfig", bearer1, "", 404, "not_found"},
		authCase{"kubeconfig deleted cluster", "POST", "/clusters/" + idDel + "/kubeconfig", bearer1, "", 409, "cluster_not_active"},
		authCase{"kubeconfig by the VM itself", "POST", "/clusters/" + id1 + "/kubeconfig", map[string]string{"Authorization": "Bearer " + access1, "X-exc-imds-token": imds1}, "", 403, "token_scope"},
		authCase{"kubeconfigs by its operator", "GET", "/clusters/" + id1 + "/kubeconfigs", bearer1, "", 200, ""},
		authCase{"kubeconfigs other org", "GET", "/clusters/" + id1 + "/kubeconfigs", bearer2, "", 404, "not_found"},
		authCase{"kubeconfigs deleted cluster", "GET", "/clusters/" + idDel + "/kubeconfigs", bearer1, "", 200, ""},
		authCase{"kubeconfigs by the VM itself", "GET", "/clusters/" + id1 + "/kubeconfigs", map[string]string{"Authorization": "Bearer " + access1, "X-exc-imds-token": imds1}, "", 403, "token_scope"},
		authCase{"upgrade plan by its operator", "POST", "/clusters/" + id1 + "/upgrade", bearer1, dryUpgrade, 200, ""},
		authCase{"upgrade other org", "POST", "/clusters/" + id1 + "/upgrade", bearer2, dryUpgrade, 404, "not_found"},
		authCase{"upgrade deleted cluster", "POST", "/clusters/" + idDel + "/upgrade", bearer1, dryUpgrade, 409, "cluster_not_active"},
		authCase{"upgrade read other org", "GET", "/clusters/" + id1 + "/upgrade", bearer2, "", 404, "not_found"},
		authCase{"upgrade never begun", "GET", "/clusters/" + id1 + "/upgrade", bearer1, "", 404, "not_found"},
		authCase{"upgrade resume other org", "POST", "/clusters/" + id1 + "/upgrade/resume", bearer2, "", 404, "not_found"},
		authCase{"upgrade resume none", "POST", "/clusters/" + id1 + "/upgrade/resume", bearer1, "", 404, "not_found"},
		authCase{"upgrade abort other org", "POST", "/clusters/" + id1 + "/upgrade/abort", bearer2, "", 404, "not_found"},
		authCase{"upgrade by the VM itself", "POST", "/clusters/" + id1 + "/upgrade", map[string]string{"Authorization": "Bearer " + access1, "X-exc-imds-token": imds1}, dryUpgrade, 403, "token_scope"},
	)
	// Bad ids: refused as a 400 once authenticated, as a 401 before (the
	// token is checked first, so an id never tells a stranger anything),
	// but for a NUL, which the edge refuses before anything (issue 43): a
	// rule of every path, it tells nothing of any id (unauthenticatedBadID).
	badIDs := []string{"0", "-1", "+1", "01", "1.5", "1e3", "abc", "99999999999999999999", "9223372036854775808",
		"1%2F..%2F2", "..%2F1", "1;2", "%00", "1%00", "%201", "%EF%BC%91", "0x1"}
	for _, method := range []string{"GET", "DELETE"} {
		for _, id := range badIDs {
			cases = append(cases,
				authCase{"bad id " + id, method, "/clusters/" + id, bearer1, "", 400, "invalid_path"},
				unauthenticatedBadID("bad id "+id+" no token", method, "/clusters/"+id, id))
		}
		// Unclean paths are no route at all (never a redirect).
		for _, p := range []string{"/clusters/../" + id1, "/clusters//" + id1, "/clusters/./" + id1, "/clusters/" + id1 + "/", "/clusters/" + id1 + "/.."} {
			cases = append(cases, authCase{"unclean " + p, method, p, bearer1, "", 404, "not_found"})
		}
	}
	for _, r := range []struct{ method, what string }{{"POST", "kubeconfig"}, {"GET", "kubeconfigs"}, {"POST", "credentials"}} {
		for _, id := range badIDs {
			cases = append(cases,
				authCase{r.what + " bad id " + id, r.method, "/clusters/" + id + "/" + r.what, bearer1, "", 400, "invalid_path"},
				unauthenticatedBadID(r.what+" bad id "+id+" no token", r.method, "/clusters/"+id+"/"+r.what, id))
		}
	}
	for _, r := range []struct{ method, what string }{{"GET", "bootstrap"}, {"POST", "rebootstrap"}} {
		for _, id := range badIDs {
			cases = append(cases,
				authCase{"node bad id " + id, r.method, "/clusters/" + id + "/nodes/" + itoa(vm1) + "/" + r.what, bearer1, "", 400, "invalid_path"},
				authCase{"node bad vm_id " + id, r.method, "/clusters/" + id1 + "/nodes/" + id + "/" + r.what, bearer1, "", 400, "invalid_path"},
				unauthenticatedBadID("node bad vm_id "+id+" no token", r.method, "/clusters/"+id1+"/nodes/"+id+"/"+r.what, id))
		}
	}

	// GET /bootstrap/control-plane/{vm_id}: what TestBundleProofs does not
	// already try.
	both := func(imds, authorization string) map[string]string {
		h := map[string]string{}
		if imds != "" {
			h["X-exc-imds-token"] = imds
		}
		if authorization != "" {
			h["Authorization"] = authorization
		}
		return h
	}
	bundlePath := "/bootstrap/control-plane/"
	for _, c := range refused {
		if c.authorization == "" || c.vmToken {
			continue
		}
		cases = append(cases, authCase{"bundle bearer: " + c.name, "GET", bundlePath + itoa(vm1), both(imds1, c.authorization), "", c.status, c.code})
	}
	cases = append(cases,
		authCase{"bundle valid", "GET", bundlePath + itoa(vm1), both(imds1, "Bearer "+access1), "", 200, ""},
		authCase{"bundle operator token with the VM's IMDS", "GET", bundlePath + itoa(vm1), both(imds1, "Bearer "+valid), "", 403, "token_scope"},
		authCase{"bundle a peer VM's token with the VM's IMDS", "GET", bundlePath + itoa(vm1), both(imds1, "Bearer "+vmToken2), "", 403, "forbidden"},
		authCase{"bundle the VM's token for a peer's path", "GET", bundlePath + itoa(vm2), both(imds1, "Bearer "+access1), "", 403, "forbidden"},
		authCase{"bundle principal token as IMDS token", "GET", bundlePath + itoa(vm1), both(access1, "Bearer "+access1), "", 401, "unauthenticated"},
		authCase{"bundle oversized IMDS token", "GET", bundlePath + itoa(vm1), both(strings.Repeat("i", 600), "Bearer "+access1), "", 401, "unauthenticated"},
		authCase{"bundle expired IMDS", "GET", bundlePath + itoa(vm1), both(expiredIMDS, "Bearer "+access1), "", 401, "unauthenticated"},
		authCase{"bundle IMDS of another VM", "GET", bundlePath + itoa(vm2), both(imds1, "Bearer "+access1), "", 403, "forbidden"},
		authCase{"bundle IMDS of another org", "GET", bundlePath + itoa(vm1), both(imdsOrg2, "Bearer "+access1), "", 403, "forbidden"},
		authCase{"bundle IMDS and bearer of another org", "GET", bundlePath + itoa(vm1), both(imdsOrg2, "Bearer "+accessOrg2), "", 403, "forbidden"},
		authCase{"bundle no headers", "GET", bundlePath + itoa(vm1), nil, "", 401, "unauthenticated"},
		authCase{"bundle no IMDS", "GET", bundlePath + itoa(vm1), both("", "Bearer "+access1), "", 401, "unauthenticated"},
	)
	for _, id := range badIDs {
		cases = append(cases, authCase{"bundle bad vm_id " + id, "GET", bundlePath + id, both(imds1, "Bearer "+access1), "", 400, "invalid_path"})
	}
	for _, p := range []string{bundlePath + "../" + itoa(vm1), bundlePath + "/" + itoa(vm1), bundlePath + "./" + itoa(vm1), bundlePath + itoa(vm1) + "/"} {
		cases = append(cases, authCase{"bundle unclean " + p, "GET", p, both(imds1, "Bearer "+access1), "", 404, "not_found"})
	}

	// POST /bootstrap/control-plane/{vm_id}/health: the bundle's four
	// proofs, then a JSON body naming the role's checks (health_test.go).
	healthPath := func(vm int64) string { return bundlePath + itoa(vm) + "/health" }
	for _, c := range refused {
		if c.authorization != "" && !c.vmToken {
			cases = append(cases, authCase{"health bearer: " + c.name, "POST", healthPath(vm1), both(imds1, c.authorization), cpHealthy, c.status, c.code})
		}
	}
	healthProof := both(imds1, "Bearer "+access1)
	cases = append(cases,
		authCase{"health peer VM", "POST", healthPath(vm2), healthProof, cpHealthy, 403, "forbidden"},
		authCase{"health operator token with the VM's IMDS", "POST", healthPath(vm1), both(imds1, "Bearer "+valid), cpHealthy, 403, "token_scope"},
		authCase{"health other org's IMDS", "POST", healthPath(vm1), both(imdsOrg2, "Bearer "+access1), cpHealthy, 403, "forbidden"},
		authCase{"health no IMDS", "POST", healthPath(vm1), both("", "Bearer "+access1), cpHealthy, 401, "unauthenticated"},
		authCase{"health bad vm_id", "POST", bundlePath + "0x1/health", healthProof, cpHealthy, 400, "invalid_path"},
		authCase{"health GET", "GET", healthPath(vm1), healthProof, "", 405, "method_not_allowed"},
		authCase{"health without a body", "POST", healthPath(vm1), healthProof, "", 400, "invalid_json"},
		authCase{"health valid", "POST", healthPath(vm1), healthProof, cpHealthy, 204, ""},
	)

	// POST /bootstrap/control-plane/{vm_id}/renew: the bundle's four
	// proofs, then a JSON body, then the node must have been ready (vm1 is
	// bundle_fetched here, and failed once the status cases below ran:
	// refused both times). Proof of possession: renewal_test.go.
	renewPath := func(vm int64) string { return bundlePath + itoa(vm) + "/renew" }
	const noCSRs = `{"csrs":{}}`
	for _, c := range refused {
		if c.authorization == "" || c.vmToken {
			continue
		}
		cases = append(cases, authCase{"renew bearer: " + c.name, "POST", renewPath(vm1), both(imds1, c.authorization), noCSRs, c.status, c.code})
	}
	for _, id := range badIDs {
		cases = append(cases, authCase{"renew bad vm_id " + id, "POST", bundlePath + id + "/renew", both(imds1, "Bearer "+access1), noCSRs, 400, "invalid_path"})
	}
	renewProof := both(imds1, "Bearer "+access1)
	cases = append(cases,
		authCase{"renew peer VM", "POST", renewPath(vm2), renewProof, noCSRs, 403, "forbidden"},
		authCase{"renew operator token with the VM's IMDS", "POST", renewPath(vm1), both(imds1, "Bearer "+valid), noCSRs, 403, "token_scope"},
		authCase{"renew other org's IMDS", "POST", renewPath(vm1), both(imdsOrg2, "Bearer "+access1), noCSRs, 403, "forbidden"},
		authCase{"renew other org's VM and token", "POST", renewPath(vm1), both(imdsOrg2, "Bearer "+accessOrg2), noCSRs, 403, "forbidden"},
		authCase{"renew another org's VM path", "POST", renewPath(c2.ControlPlaneVMIDs[0]), renewProof, noCSRs, 403, "forbidden"},
		authCase{"renew operator token without IMDS proof", "POST", renewPath(vm1), both("", "Bearer "+valid), noCSRs, 401, "unauthenticated"},
		authCase{"renew IMDS proof without a bearer", "POST", renewPath(vm1), both(imds1, ""), noCSRs, 401, "unauthenticated"},
		authCase{"renew expired IMDS", "POST", renewPath(vm1), both(expiredIMDS, "Bearer "+access1), noCSRs, 401, "unauthenticated"},
		authCase{"renew GET", "GET", renewPath(vm1), renewProof, "", 405, "method_not_allowed"},
		authCase{"renew before ready", "POST", renewPath(vm1), renewProof, noCSRs, 409, "node_not_ready"},
		authCase{"renew without a body", "POST", renewPath(vm1), renewProof, "", 400, "invalid_json"},
		authCase{"renew with a key in the body", "POST", renewPath(vm1), renewProof, `{"csrs":{},"key":"x"}`, 400, "invalid_field"},
	)

	// POST /bootstrap/control-plane/{vm_id}/status: the bundle's four
	// proofs, then the report itself. The cases run in order: vm1 fetched
	// its bundle above (bundle_fetched), so it moves to kubelet_started,
	// refuses to go back, fails, and then accepts only failed.
	statusPath := func(vm int64) string { return bundlePath + itoa(vm) + "/status" }
	report := func(phase string) string { return `{"phase":"` + phase + `"}` }
	for _, c := range refused {
		if c.authorization == "" || c.vmToken {
			continue
		}
		cases = append(cases, authCase{"status bearer: " + c.name, "POST", statusPath(vm1), both(imds1, c.authorization), report("ready"), c.status, c.code})
	}
	for _, id := range badIDs {
		cases = append(cases, authCase{"status bad vm_id " + id, "POST", bundlePath + id + "/status", both(imds1, "Bearer "+access1), report("ready"), 400, "invalid_path"})
	}
	vmProof := both(imds1, "Bearer "+access1)
	cases = append(cases,
		authCase{"status peer VM", "POST", statusPath(vm2), vmProof, report("ready"), 403, "forbidden"},
		authCase{"status other org's IMDS", "POST", statusPath(vm1), both(imdsOrg2, "Bearer "+access1), report("ready"), 403, "forbidden"},
		authCase{"status other org's VM and token", "POST", statusPath(vm1), both(imdsOrg2, "Bearer "+accessOrg2), report("ready"), 403, "forbidden"},
		authCase{"status another org's VM path", "POST", statusPath(c2.ControlPlaneVMIDs[0]), vmProof, report("ready"), 403, "forbidden"},
		authCase{"status operator token without IMDS proof", "POST", statusPath(vm1), both("", "Bearer "+valid), report("ready"), 401, "unauthenticated"},
		authCase{"status IMDS proof without a bearer", "POST", statusPath(vm1), both(imds1, ""), report("ready"), 401, "unauthenticated"},
		authCase{"status expired IMDS", "POST", statusPath(vm1), both(expiredIMDS, "Bearer "+access1), report("ready"), 401, "unauthenticated"},
		authCase{"status no body", "POST", statusPath(vm1), vmProof, "", 400, "invalid_json"},
		authCase{"status not JSON", "POST", statusPath(vm1), vmProof, "phase=ready", 400, "invalid_json"},
		authCase{"status unknown phase", "POST", statusPath(vm1), vmProof, report("booting"), 400, "invalid_request"},
		authCase{"status k8sapi's own phase", "POST", statusPath(vm1), vmProof, report("bundle_fetched"), 400, "invalid_request"},
		authCase{"status no phase", "POST", statusPath(vm1), vmProof, `{"message":"hello"}`, 400, "invalid_request"},
		authCase{"status org_id in body", "POST", statusPath(vm1), vmProof, `{"phase":"ready","org_id":2}`, 400, "invalid_field"},
		authCase{"status oversize message", "POST", statusPath(vm1), vmProof, `{"phase":"failed","message":"` + strings.Repeat("m", 4097) + `"}`, 400, "invalid_request"},
		authCase{"status NUL in message", "POST", statusPath(vm1), vmProof, `{"phase":"failed","message":"a\u0000b"}`, 400, "invalid_request"},
		authCase{"status body over 64 KiB", "POST", statusPath(vm1), vmProof, `{"phase":"failed","message":"` + strings.Repeat("m", 70000) + `"}`, 413, "body_too_large"},
		authCase{"status valid", "POST", statusPath(vm1), vmProof, report("kubelet_started"), 204, ""},
		authCase{"status operator token with the VM's IMDS", "POST", statusPath(vm1), both(imds1, "Bearer "+valid), report("kubelet_started"), 403, "token_scope"},
		authCase{"status a peer VM's token with the VM's IMDS", "POST", statusPath(vm1), both(imds1, "Bearer "+vmToken2), report("kubelet_started"), 403, "forbidden"},
		authCase{"status backwards", "POST", statusPath(vm1), vmProof, report("prerequisites_installed"), 409, "phase_regression"},
		authCase{"status failed", "POST", statusPath(vm1), vmProof, `{"phase":"failed","message":"step x failed"}`, 204, ""},
		authCase{"status failed again", "POST", statusPath(vm1), vmProof, report("failed"), 204, ""},
		authCase{"status forward after failed", "POST", statusPath(vm1), vmProof, report("ready"), 409, "bootstrap_failed"},
		authCase{"renew after failed", "POST", renewPath(vm1), renewProof, `{"csrs":{}}`, 409, "node_not_ready"},
	)

	cases = append(cases, workerAuthCases(t, s, c1.ClusterID, refused, both, vm1, imds1, access1, imdsOrg2, accessOrg2, valid)...)
	cases = append(cases, addonsAuthCases(refused, both, vm1, vm2, c2.ControlPlaneVMIDs[0], imds1, access1, imdsOrg2, valid)...)

	servers := map[string]string{}
	for _, fn := range []string{"CreateClusterFunction", "ClustersFunction", "GetBundleFunction"} {
		srv := httptest.NewServer(s.servers[fn].Handler(api.FunctionNamed(fn)))
		t.Cleanup(srv.Close)
		servers[fn] = srv.URL
	}
	function := func(method, path string) string {
		switch {
		case strings.HasPrefix(path, "/bootstrap/"):
			return servers["GetBundleFunction"]
		case method == "POST" && (path == "/clusters" || strings.HasSuffix(path, "/kubeconfig") || strings.HasSuffix(path, "/credentials")):
			return servers["CreateClusterFunction"]
		}
		return servers["ClustersFunction"]
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, function(c.method, c.path)+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.headers {
				req.Header[k] = []string{v} // as sent, not canonicalised
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := stacktest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
			if r.Status != c.status {
				t.Fatalf("= %d %s, want %d", r.Status, r.Body, c.status)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" && r.Status != http.StatusNoContent {
				t.Errorf("Content-Type %q", ct)
			}
			if c.code != "" {
				if got := r.ErrorCode(t); got != c.code {
					t.Errorf("code %q, want %q", got, c.code)
				}
			}
			keyed := c.status == 201 || (c.status == 200 && strings.HasPrefix(c.path, bundlePath))
			if !keyed && strings.Contains(string(body), "PRIVATE KEY") {
				t.Errorf("key material in %s", body)
			}
			for _, tok := range secrets {
				if strings.Contains(string(body), tok) {
					t.Errorf("a token came back in the body")
				}
			}
		})
	}
	t.Logf("auth matrix: %d cases over %d routes", len(cases), 16)
	// Nothing the refused callers sent founded or deleted anything: org 1
	// has its two clusters plus the valid create, one of them deleted.
	var active, deleted int
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'active'), count(*) FILTER (WHERE status = 'deleted') FROM kube_clusters WHERE org_id = 1`).Scan(&active, &deleted)
	if active != 2 || deleted != 1 {
		t.Errorf("org 1: %d active, %d deleted clusters, want 2 and 1", active, deleted)
	}
	// Of every report above, only vm1's own moved anything, and the first
	// failure's message stayed.
	var moved int
	var message string
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE phase NOT IN ('pending', 'bundle_fetched')),
		max(message) FILTER (WHERE vm_id = $1) FROM kube_nodes`, vm1).Scan(&moved, &message)
	if moved != 1 || message != "step x failed" {
		t.Errorf("%d nodes moved by reports, vm1's message %q; want 1 and the first failure's", moved, message)
	}
}

// workerAuthCases are the worker's routes' rows: the control plane's
// refused callers, a worker's proofs for a peer's path, another org's, an
// operator's token and a control-plane VM's proofs (vm1's: no worker).
func workerAuthCases(t *testing.T, s *stack, clusterID int64, refused []refusedCaller, both func(imds, authorization string) map[string]string,
	vm1 int64, imds1, access1, imdsOrg2, accessOrg2, operator string) []authCase {
	t.Helper()
	workers := s.AddPool(1, clusterID, stacktest.TwoWorkers).Nodes
	w, peer := workers[0].VMID, workers[1].VMID
	imdsW, accessW := s.VMCredentials(w)
	proof := both(imdsW, "Bearer "+accessW)
	const noCSRs = `{"kubelet_client_csr":"","kubelet_serving_csr":""}`
	const noRenewal = `{"csrs":{},"certificates":{}}`
	var cases []authCase
	// The worker's routes by method and what follows /bootstrap/worker/{vm_id}.
	for _, r := range []struct{ method, suffix, body string }{{"GET", "", ""}, {"POST", "/csr", noCSRs}, {"POST", "/renew", noRenewal},
		{"POST", "/health", workerHealthy}} {
		path := func(vm string) string { return "/bootstrap/worker/" + vm + r.suffix }
		for _, c := range refused {
			if c.authorization != "" && !c.vmToken {
				cases = append(cases, authCase{"worker " + r.method + r.suffix + " bearer: " + c.name, r.method, path(itoa(w)), both(imdsW, c.authorization), r.body, c.status, c.code})
			}
		}
		cases = append(cases,
			authCase{"worker " + r.method + r.suffix + " peer's path", r.method, path(itoa(peer)), proof, r.body, 403, "forbidden"},
			authCase{"worker " + r.method + r.suffix + " operator token with its IMDS", r.method, path(itoa(w)), both(imdsW, "Bearer "+operator), r.body, 403, "token_scope"},
			authCase{"worker " + r.method + r.suffix + " other org's IMDS", r.method, path(itoa(w)), both(imdsOrg2, "Bearer "+accessW), r.body, 403, "forbidden"},
			authCase{"worker " + r.method + r.suffix + " other org's VM and token", r.method, path(itoa(w)), both(imdsOrg2, "Bearer "+accessOrg2), r.body, 403, "forbidden"},
			authCase{"worker " + r.method + r.suffix + " no IMDS", r.method, path(itoa(w)), both("", "Bearer "+accessW), r.body, 401, "unauthenticated"},
			authCase{"worker " + r.method + r.suffix + " a control-plane VM's proofs", r.method, path(itoa(vm1)), both(imds1, "Bearer "+access1), r.body, 404, "not_found"},
			authCase{"worker " + r.method + r.suffix + " bad vm_id", r.method, path("0x1"), proof, r.body, 400, "invalid_path"},
		)
	}
	return append(cases,
		authCase{"worker bundle valid", "GET", "/bootstrap/worker/" + itoa(w), proof, "", 200, ""},
		authCase{"worker bundle POST", "POST", "/bootstrap/worker/" + itoa(w), proof, "", 405, "method_not_allowed"},
		authCase{"worker CSRs without a body", "POST", "/bootstrap/worker/" + itoa(w) + "/csr", proof, "", 400, "invalid_json"},
		authCase{"worker CSRs with a key in the body", "POST", "/bootstrap/worker/" + itoa(w) + "/csr", proof, `{"kubelet_client_csr":"","key":"x"}`, 400, "invalid_field"},
		authCase{"worker CSRs empty", "POST", "/bootstrap/worker/" + itoa(w) + "/csr", proof, noCSRs, 400, "invalid_request"},
		authCase{"worker renewal without a body", "POST", "/bootstrap/worker/" + itoa(w) + "/renew", proof, "", 400, "invalid_json"},
		authCase{"worker renewal with a key in the body", "POST", "/bootstrap/worker/" + itoa(w) + "/renew", proof, `{"csrs":{},"key":"x"}`, 400, "invalid_field"},
		authCase{"worker renewal before its Node is Ready", "POST", "/bootstrap/worker/" + itoa(w) + "/renew", proof, noRenewal, 409, "node_not_ready"},
		authCase{"worker's proofs on the control-plane bundle", "GET", "/bootstrap/control-plane/" + itoa(w), proof, "", 404, "not_found"},
		authCase{"worker's proofs on the control-plane status", "POST", "/bootstrap/control-plane/" + itoa(w) + "/status", proof, `{"phase":"ready"}`, 404, "not_found"},
		authCase{"worker's proofs on the control-plane health", "POST", "/bootstrap/control-plane/" + itoa(w) + "/health", proof, cpHealthy, 404, "not_found"},
		authCase{"worker health valid", "POST", "/bootstrap/worker/" + itoa(w) + "/health", proof, workerHealthy, 204, ""},
		authCase{"worker health naming etcd", "POST", "/bootstrap/worker/" + itoa(w) + "/health", proof, cpHealthy, 400, "invalid_request"},
	)
}

// unauthenticatedBadID is the case of a bad path id sent without a token:
// 401, unless the id holds a NUL, which the edge answers first (400).
func unauthenticatedBadID(name, method, path, id string) authCase {
	if strings.Contains(id, "%00") {
		return authCase{name, method, path, nil, "", 400, "invalid_path"}
	}
	return authCase{name, method, path, nil, "", 401, "unauthenticated"}
}

// addonsAuthCases are the addons route's rows (GET and POST
// /bootstrap/control-plane/{vm_id}/addons): the bundle's four proofs, then
// nothing to apply for a VM no upgrade chose (204), and a report taken
// from the chosen node only (404 here: no upgrade runs), its body checked.
func addonsAuthCases(refused []refusedCaller, both func(imds, authorization string) map[string]string,
	vm1, vm2, vmOrg2 int64, imds1, access1, imdsOrg2, operator string) []authCase {
	path := func(vm int64) string { return "/bootstrap/control-plane/" + itoa(vm) + "/addons" }
	const applied = `{"kubernetes_version":"v1.36.3","failure":""}`
	var cases []authCase
	for _, c := range refused {
		if c.authorization == "" || c.vmToken {
			continue
		}
		cases = append(cases,
			authCase{"addons bearer: " + c.name, "GET", path(vm1), both(imds1, c.authorization), "", c.status, c.code},
			authCase{"addons report bearer: " + c.name, "POST", path(vm1), both(imds1, c.authorization), applied, c.status, c.code})
	}
	proof := both(imds1, "Bearer "+access1)
	for _, m := range []struct{ method, body string }{{"GET", ""}, {"POST", applied}} {
		cases = append(cases,
			authCase{"addons peer VM", m.method, path(vm2), proof, m.body, 403, "forbidden"},
			authCase{"addons another org's VM path", m.method, path(vmOrg2), proof, m.body, 403, "forbidden"},
			authCase{"addons operator token with the VM's IMDS", m.method, path(vm1), both(imds1, "Bearer "+operator), m.body, 403, "token_scope"},
			authCase{"addons other org's IMDS", m.method, path(vm1), both(imdsOrg2, "Bearer "+access1), m.body, 403, "forbidden"},
			authCase{"addons no IMDS", m.method, path(vm1), both("", "Bearer "+access1), m.body, 401, "unauthenticated"},
			authCase{"addons bad vm_id", m.method, "/bootstrap/control-plane/0x1/addons", proof, m.body, 400, "invalid_path"},
		)
	}
	return append(cases,
		authCase{"addons nothing to apply", "GET", path(vm1), proof, "", 204, ""},
		authCase{"addons report of no upgrade", "POST", path(vm1), proof, applied, 404, "not_found"},
		authCase{"addons report without a body", "POST", path(vm1), proof, "", 400, "invalid_json"},
		authCase{"addons report without a version", "POST", path(vm1), proof, `{"failure":"x"}`, 400, "invalid_field"},
		authCase{"addons report with an unknown field", "POST", path(vm1), proof, `{"kubernetes_version":"v1.36.3","node":"cp-1"}`, 400, "invalid_field"},
		authCase{"addons report over 512 bytes", "POST", path(vm1), proof, `{"kubernetes_version":"v1.36.3","failure":"` + strings.Repeat("f", 513) + `"}`, 400, "invalid_field"},
		authCase{"addons PUT", "PUT", path(vm1), proof, applied, 405, "method_not_allowed"},
	)
}
