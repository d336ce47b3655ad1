package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apidocs"
	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
)

// The document is valid OpenAPI 3.1, checked by the reference validator.
func TestOpenAPIValidates(t *testing.T) {
	bin, err := exec.LookPath("openapi-spec-validator")
	if err != nil {
		t.Fatal("openapi-spec-validator is not installed (pip install openapi-spec-validator): the document cannot be validated")
	}
	out, err := exec.Command(bin, "--schema", "3.1", "../apidocs/openapi.json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("openapi-spec-validator: %v\n%s", err, out)
	}
}

// Every route of the code is in the document and nothing else is.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var code, doc []string
	for _, r := range Routes() {
		code = append(code, r.Method+" "+r.Path)
	}
	for _, o := range apidocstest.Operations() {
		doc = append(doc, o.Key())
		if o.Op["operationId"] == nil || o.Op["summary"] == nil || o.Op["security"] == nil {
			t.Errorf("%s: needs operationId, summary and security", o.Key())
		}
	}
	slices.Sort(code)
	if !slices.Equal(code, doc) {
		t.Fatalf("api.Routes %v\nopenapi.json %v", code, doc)
	}
}

func prop(t *testing.T, schema, field string) map[string]any {
	t.Helper()
	p, ok := apidocstest.Schema(schema)["properties"].(map[string]any)[field].(map[string]any)
	if !ok {
		t.Fatalf("%s.%s is not in the document", schema, field)
	}
	return p
}

func numberOf(t *testing.T, m map[string]any, key string) int {
	t.Helper()
	n, ok := m[key].(json.Number)
	if !ok {
		t.Fatalf("%v has no %s", m, key)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return int(i)
}

// The limits and defaults of the document are the validator's: equal to
// founding's constants, and the boundaries accept and refuse as documented.
func TestOpenAPILimitsMatchTheCode(t *testing.T) {
	const req = "CreateClusterRequest"
	for _, c := range []struct {
		field, key string
		want       int
	}{
		{"security_group_ids", "maxItems", clusterspec.MaxSecurityGroups},
		{"root_volume_size_gib", "minimum", clusterspec.MinRootVolumeGiB},
		{"root_volume_size_gib", "maximum", clusterspec.MaxRootVolumeGiB},
		{"ssh_pubkey", "maxLength", clusterspec.MaxSSHPubkeyBytes},
		{"control_plane_instance_type", "maxLength", clusterspec.MaxInstanceTypeLen},
	} {
		if got := numberOf(t, prop(t, req, c.field), c.key); got != c.want {
			t.Errorf("%s.%s = %d in the document, %d in the code", c.field, c.key, got, c.want)
		}
	}
	var counts []int
	for _, v := range prop(t, req, "control_plane_count")["enum"].([]any) {
		n, _ := v.(json.Number).Int64()
		counts = append(counts, int(n))
	}
	if !slices.Equal(counts, clusterspec.ControlPlaneCounts) {
		t.Errorf("control_plane_count enum = %v in the document, %v in the code", counts, clusterspec.ControlPlaneCounts)
	}
	create, _ := apidocstest.Find("POST", "/clusters")
	body := create.Op["requestBody"].(map[string]any)
	if got := numberOf(t, body, "x-max-body-bytes"); got != MaxBodyBytes {
		t.Errorf("x-max-body-bytes = %d, MaxBodyBytes = %d", got, MaxBodyBytes)
	}
	key := apidocstest.Resolve(apidocstest.Doc["components"].(map[string]any)["parameters"].(map[string]any)["IdempotencyKey"])
	if got := numberOf(t, key["schema"].(map[string]any), "maxLength"); got != maxIdempotencyKeyLen {
		t.Errorf("Idempotency-Key maxLength = %d, code %d", got, maxIdempotencyKeyLen)
	}
	var algs []string
	for _, a := range prop(t, req, "key_algorithm")["enum"].([]any) {
		algs = append(algs, a.(string))
		if _, err := pki.ParseAlgorithm(a.(string)); err != nil {
			t.Errorf("documented key_algorithm %v is refused: %v", a, err)
		}
	}
	if !slices.Equal(algs, []string{string(pki.ECDSAP256), string(pki.RSA2048)}) {
		t.Errorf("key_algorithm enum %v", algs)
	}
	var cnis []clusterfacts.CNI
	for _, c := range prop(t, req, "cni")["enum"].([]any) {
		cnis = append(cnis, clusterfacts.CNI(c.(string)))
	}
	for _, schema := range []string{"FoundingResult", "ClusterView"} {
		if got := prop(t, schema, "cni")["enum"]; fmt.Sprint(got) != fmt.Sprint(cnis) {
			t.Errorf("%s.cni enum %v, request's %v", schema, got, cnis)
		}
	}
	if !slices.Equal(cnis, clusterfacts.CNIs()) {
		t.Errorf("cni enum %v in the document, %v in the code", cnis, clusterfacts.CNIs())
	}
	if got := fmt.Sprint(prop(t, req, "kubernetes_version")["enum"]); got != fmt.Sprint(artifacts.SupportedVersions()) {
		t.Errorf("kubernetes_version enum %v in the document, %v in the release table", got, artifacts.SupportedVersions())
	}
	if p := prop(t, req, "control_plane_instance_type")["pattern"]; p != `^[a-z0-9][a-z0-9.\-]*$` {
		t.Errorf("instance type pattern %v", p)
	}

	// Defaults: the spec of the smallest valid request.
	minimal := `{"control_plane_image_id":1,"control_plane_instance_type":"c1.large","subnet_id":1}`
	spec := mustValidate(t, minimal)
	defaults := map[string]any{
		"control_plane_count": spec.ControlPlaneCount, "zone_id": spec.ZoneID, "key_algorithm": string(spec.KeyAlgorithm), "cni": string(spec.CNI),
		"allocate_public_ipv4": spec.AllocatePublicIPv4, "ssh_pubkey": spec.SSHPubkey, "security_group_ids": spec.SecurityGroupIDs,
	}
	for field, want := range defaults {
		got, _ := json.Marshal(prop(t, req, field)["default"])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("%s default = %s in the document, %s in the code", field, got, w)
		}
	}
	var required []string
	for _, r := range apidocstest.Schema(req)["required"].([]any) {
		required = append(required, r.(string))
	}
	if !slices.Equal(required, []string{"control_plane_image_id", "control_plane_instance_type", "subnet_id"}) {
		t.Errorf("required %v", required)
	}

	// Boundaries: what the document accepts the code accepts, one step past
	// it both refuse.
	schema := apidocstest.SchemaRef(req)
	with := func(field string, v any) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(minimal), &m)
		m[field] = v
		b, _ := json.Marshal(m)
		return string(b)
	}
	ids := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i + 1
		}
		return s
	}
	key256 := "ssh-ed25519 " + strings.Repeat("A", clusterspec.MaxSSHPubkeyBytes-len("ssh-ed25519 "))
	for _, c := range []struct {
		field     string
		ok, wrong any
	}{
		{"control_plane_count", 3, 4},
		{"control_plane_count", 3, 2},
		{"control_plane_count", 1, 0},
		{"root_volume_size_gib", clusterspec.MinRootVolumeGiB, clusterspec.MinRootVolumeGiB - 1},
		{"root_volume_size_gib", clusterspec.MaxRootVolumeGiB, clusterspec.MaxRootVolumeGiB + 1},
		{"security_group_ids", ids(clusterspec.MaxSecurityGroups), ids(clusterspec.MaxSecurityGroups + 1)},
		{"security_group_ids", []int{1, 2}, []int{2, 2}},
		{"control_plane_instance_type", strings.Repeat("a", clusterspec.MaxInstanceTypeLen), strings.Repeat("a", clusterspec.MaxInstanceTypeLen+1)},
		{"control_plane_instance_type", "e2.medium", "E2.medium"},
		{"ssh_pubkey", key256, key256 + "A"},
		{"zone_id", 1, 0},
		{"subnet_id", 1, 0},
		{"control_plane_image_id", 1, -1},
		{"key_algorithm", "rsa-2048", "rsa-4096"},
	} {
		good, bad := with(c.field, c.ok), with(c.field, c.wrong)
		if err := apidocstest.ValidateJSON(schema, []byte(good)); err != nil {
			t.Errorf("document refuses %s: %v", good[:min(len(good), 120)], err)
		}
		mustValidate(t, good)
		if err := apidocstest.ValidateJSON(schema, []byte(bad)); err == nil {
			t.Errorf("document accepts %s", bad[:min(len(bad), 120)])
		}
		var r clusterspec.Request
		_ = json.Unmarshal([]byte(bad), &r)
		if _, err := r.Validate(); err == nil {
			t.Errorf("code accepts %s", bad[:min(len(bad), 120)])
		}
	}
	// The example is a valid request.
	ex := body["content"].(map[string]any)["application/json"].(map[string]any)["example"]
	if err := apidocstest.Validate(schema, roundTrip(t, ex)); err != nil {
		t.Errorf("example: %v", err)
	}
	b, _ := json.Marshal(ex)
	mustValidate(t, string(b))
}

func roundTrip(t *testing.T, v any) any {
	b, _ := json.Marshal(v)
	var out any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustValidate(t *testing.T, body string) clusterspec.Spec {
	t.Helper()
	var r clusterspec.Request
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%.120s: %v", body, err)
	}
	s, err := r.Validate()
	if err != nil {
		t.Fatalf("code refuses %.120s: %v", body, err)
	}
	return s
}

// Every code of the catalogue a function can answer is in the document,
// under a status its kind maps to; the document lists no other code. That
// every code is answered somewhere is apperr's guard test.
func TestOpenAPIErrorCodesMatchTheCatalogue(t *testing.T) {
	documented := documentedCodes()
	enum := map[string]bool{}
	for _, c := range prop(t, "Error", "error")["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		enum[c.(string)] = true
	}
	catalogued := map[string]bool{}
	for _, c := range apperr.Catalogue() {
		if !c.Documented() {
			continue
		}
		catalogued[c.String()] = true
		if status := fmt.Sprint(c.Kind().Status()); !documented[status][c.String()] {
			t.Errorf("code %q is not documented under any %s response", c, status)
		}
		if !enum[c.String()] {
			t.Errorf("code %q is not in the Error schema's enum", c)
		}
	}
	for c := range enum {
		if !catalogued[c] {
			t.Errorf("the Error schema's enum lists %q, which the catalogue does not define", c)
		}
	}
	for status, codes := range documented {
		for c := range codes {
			if !catalogued[c] {
				t.Errorf("%s lists %q, which the catalogue does not define", status, c)
			}
		}
	}
}

// documentedCodes is status -> the codes the document lists under it, over
// every operation and the codes of a request no operation takes.
func documentedCodes() map[string]map[string]bool {
	documented := map[string]map[string]bool{}
	add := func(status string, codes []any) {
		if documented[status] == nil {
			documented[status] = map[string]bool{}
		}
		for _, c := range codes {
			documented[status][c.(string)] = true
		}
	}
	for _, o := range apidocstest.Operations() {
		for status, r := range o.Op["responses"].(map[string]any) {
			add(status, asAny(apidocstest.Resolve(r)["x-error-codes"]))
		}
	}
	for status, codes := range apidocstest.Doc["x-unmatched-route-errors"].(map[string]any) {
		add(status, asAny(codes))
	}
	return documented
}

func asAny(v any) []any { l, _ := v.([]any); return l }

// GET /openapi.json serves the document; GET /docs a page that embeds it and
// its renderer, references nothing outside itself, and may fetch nothing.
func TestDocsRoutes(t *testing.T) {
	h := (&Server{Docs: apidocs.Document{}}).Handler(HealthFunction)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != 200 || rec.Body.String() != string(apidocs.OpenAPI) || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json = %d %s", rec.Code, rec.Header())
	}
	if ok, err := apidocstest.Check("GET", "/openapi.json", rec.Code, rec.Header(), rec.Body.Bytes()); !ok || err != nil {
		t.Fatal(ok, err)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs", nil))
	page := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || rec.Header().Get("X-Request-Id") == "" {
		t.Fatalf("GET /docs = %d %s", rec.Code, rec.Header())
	}
	if ok, err := apidocstest.Check("GET", "/docs", rec.Code, rec.Header(), rec.Body.Bytes()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "connect-src 'none'", "script-src 'sha256-", "style-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*\s(src|href)=`).MatchString(page) {
		t.Error("the page loads an asset")
	}
	if strings.Contains(page, "//cdn") || strings.Contains(page, "fetch(") || strings.Contains(page, "XMLHttpRequest") {
		t.Error("the page fetches something")
	}
	// The embedded document is the document.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="openapi">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no embedded document")
	}
	var embedded, served any
	if err := json.Unmarshal([]byte(m[1]), &embedded); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(apidocs.OpenAPI, &served)
	a, _ := json.Marshal(embedded)
	b, _ := json.Marshal(served)
	if string(a) != string(b) {
		t.Error("the page embeds a different document")
	}
}

// The status report's limits and the phases and states of the document are
// internal/progress's.
func TestOpenAPIBootstrapMatchesTheCode(t *testing.T) {
	enum := func(v any) []string {
		var out []string
		for _, e := range v.(map[string]any)["enum"].([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	strs := func(ps any) []string {
		var out []string
		switch ps := ps.(type) {
		case []clusterfacts.Phase:
			for _, p := range ps {
				out = append(out, string(p))
			}
		case []progress.State:
			for _, p := range ps {
				out = append(out, string(p))
			}
		}
		return out
	}
	if got, want := enum(apidocstest.Schema("Phase")), strs(clusterfacts.Phases()); !slices.Equal(got, want) {
		t.Errorf("Phase enum %v, code %v", got, want)
	}
	if got, want := enum(prop(t, "StatusReport", "phase")), strs(clusterfacts.ReportableBy(clusterfacts.ControlPlane)); !slices.Equal(got, want) {
		t.Errorf("StatusReport.phase enum %v, code %v", got, want)
	}
	if got, want := enum(prop(t, "WorkerStatusReport", "phase")), strs(clusterfacts.ReportableBy(clusterfacts.Worker)); !slices.Equal(got, want) {
		t.Errorf("WorkerStatusReport.phase enum %v, code %v", got, want)
	}
	if got, want := enum(prop(t, "Bootstrap", "state")), strs(progress.States()); !slices.Equal(got, want) {
		t.Errorf("Bootstrap.state enum %v, code %v", got, want)
	}
	if got := numberOf(t, prop(t, "StatusReport", "message"), "maxLength"); got != progress.MaxMessageBytes {
		t.Errorf("message maxLength %d, code %d", got, progress.MaxMessageBytes)
	}
	report, _ := apidocstest.Find("POST", "/bootstrap/control-plane/1/status")
	body := report.Op["requestBody"].(map[string]any)
	if got := numberOf(t, body, "x-max-body-bytes"); got != MaxBodyBytes {
		t.Errorf("x-max-body-bytes = %d, MaxBodyBytes = %d", got, MaxBodyBytes)
	}
	// The boundaries and the example: what the document accepts the code
	// accepts, one step past both refuse.
	schema := apidocstest.SchemaRef("StatusReport")
	ex := body["content"].(map[string]any)["application/json"].(map[string]any)["example"]
	exJSON, _ := json.Marshal(ex)
	long := strings.Repeat("m", progress.MaxMessageBytes)
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{string(exJSON), true},
		{`{"phase":"ready"}`, true},
		{`{"phase":"failed","message":"` + long + `"}`, true},
		{`{"phase":"failed","message":"` + long + `m"}`, false},
		{`{"phase":"bundle_fetched"}`, false},
		{`{"phase":"booting"}`, false},
		{`{"message":"no phase"}`, false},
	} {
		docOK := apidocstest.ValidateJSON(schema, []byte(c.body)) == nil
		var r progress.Report
		_ = json.Unmarshal([]byte(c.body), &r)
		_, _, err := r.Validate(clusterfacts.ControlPlane)
		if docOK != c.ok || (err == nil) != c.ok {
			t.Errorf("%.60s: document accepts %v, code accepts %v, want %v", c.body, docOK, err == nil, c.ok)
		}
	}
}

// The actions a cluster's trail keeps (the routes marked Trail) are
// exactly the documented enum of an event's action: node.replace was
// answered and missing from it (issue 43). Every action of the table is
// named as migration 014's CHECK takes it.
func TestTrailActionsAreTheDocumentedEnum(t *testing.T) {
	code := slices.Clone(audit.SystemActions) // k8sapi's own decisions are kept too
	var documented []string
	for _, r := range Routes() {
		if r.Trail {
			code = append(code, r.Audit)
			code = append(code, r.Variants...)
		}
	}
	for _, a := range prop(t, "AuditEvent", "action")["enum"].([]any) {
		documented = append(documented, a.(string))
	}
	slices.Sort(code)
	slices.Sort(documented)
	if !slices.Equal(code, documented) {
		t.Errorf("the trail's actions are %v in the route table, %v in the document", code, documented)
	}
}

// GET /clusters/{id}/events documents the page sizes the code takes.
func TestOpenAPIEventsPageMatchesTheCode(t *testing.T) {
	op, ok := apidocstest.Find(http.MethodGet, "/clusters/{id}/events")
	if !ok {
		t.Fatal("GET /clusters/{id}/events is not documented")
	}
	var limit map[string]any
	for _, p := range asAny(op.Op["parameters"]) {
		if p := apidocstest.Resolve(p); p["name"] == "limit" {
			limit = p["schema"].(map[string]any)
		}
	}
	if limit == nil || numberOf(t, limit, "default") != DefaultEventsLimit || numberOf(t, limit, "maximum") != MaxEventsLimit {
		t.Errorf("limit is %v in the document; the code's default %d, maximum %d", limit, DefaultEventsLimit, MaxEventsLimit)
	}
}
