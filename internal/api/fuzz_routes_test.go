package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

// routeTarget is what FuzzEveryRoute calls: every function's routes over
// real PostgreSQL, moto and the simulator, a cluster with a worker pool,
// and the credentials of its operator and of its control-plane VM.
type routeTarget struct {
	handler          http.Handler
	operator         string
	vmIMDS, vmAccess string
	clusterID, vmID  int64
	pool             string
	routes           []api.Route
}

// newRouteTarget builds the stack as the functions run it, each function
// as its own database user.
func newRouteTarget(t testing.TB) *routeTarget {
	dsn := testenv.Postgres(t)
	owner := openPool(t, dsn)
	sim, err := simulator.New(simulator.Config{DB: openPool(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)
	kmsClient, keyID := testenv.KMSKey(t)
	bucket, awsCfg := testenv.SnapshotBucket(t)
	in, err := stacktest.New(stacktest.Config{
		Pools:    stacktest.FunctionPools(t, func(fn string) string { return testenv.FunctionDSN(t, dsn, fn) }, nil),
		Envelope: envelope.New(kmsClient, keyID, nil), SimURL: simSrv.URL, SimClient: simSrv.Client(),
		BaseDomain: "k8s.fuzz.excloud", BootstrapBaseURL: "https://k8sapi.fuzz.excloud",
		SnapshotBucket: &objectstore.Bucket{AWS: awsCfg, Name: bucket}, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	apiSrv := httptest.NewServer(in.Handler)
	t.Cleanup(apiSrv.Close)
	return founded(t, in.Handler, &stacktest.Client{T: t, APIURL: apiSrv.URL, SimURL: simSrv.URL, Pool: owner})
}

// founded founds the target's cluster and pool, and has its node Ready
// and named by a pending snapshot (id 1), so a report reaches the write.
func founded(t testing.TB, h http.Handler, c *stacktest.Client) *routeTarget {
	res := c.Found(1, stacktest.OneNode)
	c.AddPool(1, res.ClusterID, stacktest.TwoWorkers)
	vm := res.ControlPlaneVMIDs[0]
	imds, access := c.VMCredentials(vm)
	for _, step := range []stacktest.Response{
		c.FetchBundle(vm, imds, access),
		c.VMCall(http.MethodPost, bundle.StatusPathTemplate, vm, imds, access, `{"phase":"ready"}`),
		stacktest.Do(t, http.MethodPost, c.APIURL+"/clusters/"+strconv.FormatInt(res.ClusterID, 10)+"/etcd-snapshots", "", c.Bearer(1)),
	} {
		if step.Status >= 300 {
			t.Fatalf("setting up: %d %s", step.Status, step.Body)
		}
	}
	return &routeTarget{handler: h, operator: "Bearer " + c.Token(1), vmIMDS: imds, vmAccess: access,
		clusterID: res.ClusterID, vmID: vm, pool: "workers", routes: databaseRoutes()}
}

// databaseRoutes are the routes of every function that reads the
// database: all but HealthFunction's (which reads no table, and whose
// routes FuzzHandler in internal/lambdaserve drives).
func databaseRoutes() []api.Route {
	var out []api.Route
	for _, r := range api.Routes() {
		if r.Function != api.HealthFunction.Name {
			out = append(out, r)
		}
	}
	return out
}

func openPool(t testing.TB, dsn string) *pgxpool.Pool {
	p, err := store.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// params are the path parameters of every route and what each holds
// unless the fuzzer's segment takes its place.
func (rt *routeTarget) params() map[string]string {
	return map[string]string{"{id}": strconv.FormatInt(rt.clusterID, 10), "{vm_id}": strconv.FormatInt(rt.vmID, 10), "{pool}": rt.pool}
}

// path is route's path with the real values, the nth parameter (of those
// it has) replaced by segment unless segment is empty.
func (rt *routeTarget) path(route api.Route, n int, segment string) string {
	parts := strings.Split(route.Path, "/")
	seen := 0
	for i, p := range parts {
		real, ok := rt.params()[p]
		if !ok {
			continue
		}
		if parts[i] = url.PathEscape(real); seen == n && segment != "" {
			parts[i] = url.PathEscape(segment)
		}
		seen++
	}
	return strings.Join(parts, "/")
}

// target is the request's path and query (none for an empty value).
func (rt *routeTarget) target(route api.Route, n uint8, segment, query string) string {
	params := max(strings.Count(route.Path, "{"), 1)
	t := rt.path(route, int(n)%params, segment)
	if query != "" {
		t += "?" + url.Values{queryKeys[int(n)%len(queryKeys)]: {query}}.Encode()
	}
	return t
}

// queryKeys are the query parameters some route reads, and one none does.
var queryKeys = []string{"status", "limit", "cursor", "deep", "x"}

// call sends one request with the credentials the route takes.
func (rt *routeTarget) call(route api.Route, target string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(route.Method, "/", bytes.NewReader(body))
	u, err := url.Parse(target)
	if err != nil {
		panic(err) // every path is escaped above
	}
	req.URL = u
	req.Header.Set("Authorization", rt.operator)
	if strings.HasPrefix(route.Path, "/bootstrap/") {
		req.Header.Set("Authorization", "Bearer "+rt.vmAccess)
		req.Header.Set("X-exc-imds-token", rt.vmIMDS)
	}
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	rt.handler.ServeHTTP(rec, req)
	return rec
}

func badText(s string) bool { return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) }

// FuzzEveryRoute sends every route (an operator's with its org's token, a
// VM's with its four proofs) a fuzzed path segment, query value and body:
// no input reaches the database as a 503 or any other 5xx, every refusal
// is JSON, and a NUL or bytes that are not UTF-8 in the path or the query
// are a 400 whatever the route. The seeds: for every route, each path
// parameter NUL and not UTF-8, a NUL query value, and bodies whose
// strings spell a NUL or half a surrogate pair (seedRank orders them so
// each route meets the state it acts on).
func FuzzEveryRoute(f *testing.F) {
	routes := databaseRoutes()
	for rank := range 3 {
		for i, r := range routes {
			if seedRank(r) == rank {
				addRouteSeeds(f, uint8(i), r)
			}
		}
	}
	rt := newRouteTarget(f)
	f.Fuzz(func(t *testing.T, ri, n uint8, segment, query string, body []byte) {
		route := rt.routes[int(ri)%len(rt.routes)]
		target := rt.target(route, n, segment, query)
		rec := rt.call(route, target, body)
		if rec.Code >= 500 || (rec.Code >= 400 && !json.Valid(rec.Body.Bytes())) {
			t.Fatalf("%s %q with body %q: %d %s", route.Method, target, body, rec.Code, rec.Body)
		}
		pathBad := strings.Contains(route.Path, "{") && badText(segment)
		if (pathBad || badText(query)) && rec.Code != http.StatusBadRequest {
			t.Fatalf("%s %q: bad bytes answered %d %s, want 400", route.Method, target, rec.Code, rec.Body)
		}
	})
}

// seedRank orders the seeds: the VM's routes while its node is Ready
// with a pending snapshot, then the operator's (one re-opens the node),
// then the deletions.
func seedRank(r api.Route) int {
	switch {
	case r.Method == http.MethodDelete:
		return 2
	case strings.HasPrefix(r.Path, "/bootstrap/"):
		return 0
	}
	return 1
}

// addRouteSeeds adds route i's seeds.
func addRouteSeeds(f *testing.F, i uint8, r api.Route) {
	for n := range strings.Count(r.Path, "{") {
		f.Add(i, uint8(n), "x\x00", "", []byte(`{}`))
		f.Add(i, uint8(n), "\xff", "", []byte(`{}`))
	}
	f.Add(i, uint8(0), "", "a\x00", []byte(``))
	f.Add(i, uint8(1), "", "\xc3", []byte(``))
	f.Add(i, uint8(0), "", "", []byte(`{"name":"a\u0000","error":"x\u0000","message":"m","id":1}`))
	f.Add(i, uint8(0), "", "", []byte(`{"id":1,"error":"x\u0000"}`)) // issue 43: a snapshot failure report
	f.Add(i, uint8(0), "", "", []byte(`{"error":"\ud800"}`))
}

// Issue 43's measured cases, as stated: a pool name holding a NUL on each
// of its routes, and a snapshot failure report holding one, are 400 (they
// were 503 database_unavailable).
func TestNULIsA400NotA503(t *testing.T) {
	rt := newRouteTarget(t)
	pool := "/clusters/" + strconv.FormatInt(rt.clusterID, 10) + "/node-pools/x%00"
	report := "/bootstrap/control-plane/" + strconv.FormatInt(rt.vmID, 10) + "/etcd-snapshot"
	for _, c := range []struct {
		route        api.Route
		target, body string
		code         string
	}{
		{api.Route{Method: http.MethodGet}, pool, "", "invalid_path"},
		{api.Route{Method: http.MethodPatch}, pool, `{"count":1}`, "invalid_path"},
		{api.Route{Method: http.MethodDelete}, pool, "", "invalid_path"},
		{api.Route{Method: http.MethodPost, Path: report}, report, `{"id":1,"error":"x\u0000"}`, "invalid_request"},
	} {
		rec := rt.call(c.route, c.target, []byte(c.body))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) {
			t.Errorf("%s %s: %d %s, want 400 %s", c.route.Method, c.target, rec.Code, rec.Body, c.code)
		}
	}
}
