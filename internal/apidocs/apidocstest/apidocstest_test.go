package apidocstest

import (
	"net/http"
	"strings"
	"testing"
)

const goodCluster = `{"cluster_id":7,"name":"exk8s-1-7","status":"active","control_plane_dns_name":"exk8s-1-7.k8s.example",
"control_plane_vm_ids":[3],"control_plane_count":1,"nodes":[{"vm_id":3,"ordinal":1,"name":"cp-1.cluster-7.internal","ipv4":"10.0.0.3","kubernetes_version":"v1.35.4"}],
"service_cidr":"10.96.0.0/12","pod_cidr":"172.16.0.0/12","cni":"cilium","kubernetes_version":"v1.35.4","key_algorithm":"ecdsa-p256",
"dns_configured":true,"bootstrap":{"state":"pending","nodes":[{"vm_id":3,"node_name":"cp-1.cluster-7.internal","phase":"pending","message":"","updated_at":"2026-01-02T03:04:05Z","steps":[],"running":{"phase":"bundle_fetched","started_at":"2026-01-02T03:04:05Z"}}]},
"certificates_expire_at":"2027-01-02T03:04:05Z","cas_expire_at":{"ca":"2036-01-02T03:04:05Z"},"node_pools":[],"unhealthy_after":"5m0s","max_unhealthy_percent":40,"conditions":[{"type":"Ready","status":"True","reason":"Active","last_transition_time":"2026-01-02T03:04:05Z"}],"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05.5Z"}`

func jsonHeader(id string) http.Header {
	return http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {id}}
}

// The contract check refuses every way a response can break the document:
// the tests that check every response with it can fail.
func TestCheckRefusesResponsesThatBreakTheDocument(t *testing.T) {
	if documented, err := Check("GET", "/clusters/7", 200, jsonHeader("r1"), []byte(goodCluster)); !documented || err != nil {
		t.Fatalf("a valid cluster: documented=%v %v", documented, err)
	}
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   string // in the error
	}{
		{"wrong type", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"cluster_id":7`, `"cluster_id":"7"`, 1), "breaks its schema"},
		{"missing required field", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"name":"exk8s-1-7",`, "", 1), "breaks its schema"},
		{"field outside the schema", 200, jsonHeader("r1"), strings.Replace(goodCluster, `{"cluster_id"`, `{"ca_key":"x","cluster_id"`, 1), "breaks its schema"},
		{"value outside the enum", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"ecdsa-p256"`, `"rsa-4096"`, 1), "breaks its schema"},
		{"a CNI outside the enum", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"cilium"`, `"calico"`, 1), "breaks its schema"},
		{"not a date-time", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"2026-01-02T03:04:05Z"`, `"yesterday"`, 1), "breaks its schema"},
		{"bad item of a referenced schema", 200, jsonHeader("r1"), strings.Replace(goodCluster, `"ordinal":1`, `"ordinal":1.5`, 1), "breaks its schema"},
		{"not JSON", 200, jsonHeader("r1"), `{"cluster_id":`, "not JSON"},
		{"undocumented status", 418, jsonHeader("r1"), `{}`, "not documented"},
		{"no request id", 200, http.Header{"Content-Type": {"application/json"}}, goodCluster, "no X-Request-Id"},
		{"undocumented content type", 200, http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r1"}}, goodCluster, "Content-Type"},
		{"unlisted error code", 404, jsonHeader("r1"), `{"error":{"code":"kms_unavailable","message":"m","request_id":"r1"}}`, "not one of"},
		{"request_id unlike the header", 404, jsonHeader("r1"), `{"error":{"code":"not_found","message":"m","request_id":"r2"}}`, "request_id"},
	} {
		documented, err := Check("GET", "/clusters/7", c.status, c.header, []byte(c.body))
		if !documented || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: documented=%v err=%v, want an error saying %q", c.name, documented, err, c.want)
		}
	}
	if documented, err := Check("GET", "/nowhere", 200, nil, nil); documented || err != nil {
		t.Errorf("an undocumented path: documented=%v %v", documented, err)
	}
}

// Validate follows the document's $refs and asserts its keywords.
func TestValidate(t *testing.T) {
	ref := SchemaRef("CreateClusterRequest")
	if err := ValidateJSON(ref, []byte(`{"control_plane_image_id":1,"control_plane_instance_type":"c1.large","subnet_id":1}`)); err != nil {
		t.Errorf("minimal request: %v", err)
	}
	for _, bad := range []string{
		`{"control_plane_instance_type":"c1.large","subnet_id":1}`,
		`{"control_plane_image_id":1,"control_plane_instance_type":"C1","subnet_id":1}`,
		`{"control_plane_image_id":1,"control_plane_instance_type":"c1.large","subnet_id":1,"security_group_ids":[2,2]}`,
	} {
		if err := ValidateJSON(ref, []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if err := ValidateJSON(SchemaRef("NoSuchSchema"), []byte(`{}`)); err == nil {
		t.Error("a missing schema validated")
	}
}
