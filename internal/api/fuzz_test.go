package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
)

// FuzzParseID: the path id parser never panics, and accepts exactly the
// canonical decimal form of a positive int64.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "42", "9223372036854775807", "9223372036854775808", "0", "-1", "+1", "01",
		"1.5", "1e3", " 1", "1 ", "abc", "", "1%2F..%2F2", "../1", "1;2", "\x00", "1\x00", "１", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, ok := ParseID(raw)
		if !ok {
			if id != 0 {
				t.Fatalf("ParseID(%q) refused but returned %d", raw, id)
			}
			return
		}
		if id <= 0 || strconv.FormatInt(id, 10) != raw {
			t.Fatalf("ParseID(%q) = %d: not the canonical form of a positive id", raw, id)
		}
		if _, err := parseID("id", raw); err != nil {
			t.Fatalf("parseID disagrees with ParseID on %q", raw)
		}
	})
}

// FuzzCreateClusterBody runs the create-cluster body through the handler's
// decoder and the founding validator: never a panic, every refusal a 400 or
// 413 apperr, and every accepted Spec within the limits.
func FuzzCreateClusterBody(f *testing.F) {
	for _, s := range []string{
		`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`,
		`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3,"zone_id":2,"security_group_ids":[1,2,3],"allocate_public_ipv4":true,"ssh_pubkey":"ssh-ed25519 AAAA x","root_volume_size_gib":20,"key_algorithm":"rsa-2048"}`,
		`{"control_plane_count":4}`, `{"control_plane_image_id":-1}`, `{"security_group_ids":[1,1]}`,
		`{"org_id":2}`, `{"control_plane_image_id":"one"}`, `{`, `{} {}`, ``, `null`, `[]`, `"x"`,
		`{"control_plane_image_id":1e400}`, `{"control_plane_count":1.5}`, `{"ssh_pubkey":"ssh-rsa a\nb"}`,
		`{"control_plane_instance_type":"E2"}`, `{"root_volume_size_gib":9223372036854775808}`,
		`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"key_algorithm":null}`,
		`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"cni":"bridge"}`, `{"cni":"Bridge"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/clusters", bytes.NewReader(body))
		req.Body = http.MaxBytesReader(rec, req.Body, MaxBodyBytes)
		var r clusterspec.Request
		if err := decodeJSON(req, &r); err != nil {
			e, ok := apperr.As(err)
			if !ok || (e.Kind() != apperr.KindInvalid && e.Kind() != apperr.KindTooLarge) || e.Message == "" {
				t.Fatalf("decode error %v is not a 400/413 apperr", err)
			}
			return
		}
		spec, err := r.Validate()
		if err != nil {
			if e, ok := apperr.As(err); !ok || e.Kind() != apperr.KindInvalid || e.Message == "" {
				t.Fatalf("validation error %v is not a 400 apperr", err)
			}
			return
		}
		checkSpec(t, spec)
	})
}

func checkSpec(t *testing.T, s clusterspec.Spec) {
	t.Helper()
	fail := func(what string) { t.Fatalf("accepted spec breaks a limit (%s): %+v", what, s) }
	if !slices.Contains(clusterspec.ControlPlaneCounts, s.ControlPlaneCount) {
		fail("control_plane_count")
	}
	if s.ControlPlaneImageID <= 0 || s.ZoneID <= 0 || s.SubnetID <= 0 {
		fail("ids")
	}
	it := s.ControlPlaneInstanceType
	if it == "" || len(it) > clusterspec.MaxInstanceTypeLen || strings.Trim(it, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" ||
		it[0] == '.' || it[0] == '-' {
		fail("control_plane_instance_type")
	}
	if len(s.SecurityGroupIDs) > clusterspec.MaxSecurityGroups {
		fail("security_group_ids count")
	}
	seen := map[int64]bool{}
	for _, id := range s.SecurityGroupIDs {
		if id <= 0 || seen[id] {
			fail("security_group_ids")
		}
		seen[id] = true
	}
	if len(s.SSHPubkey) > clusterspec.MaxSSHPubkeyBytes || strings.ContainsAny(s.SSHPubkey, "\r\n") {
		fail("ssh_pubkey")
	}
	if s.RootVolumeSizeGiB != 0 && (s.RootVolumeSizeGiB < clusterspec.MinRootVolumeGiB || s.RootVolumeSizeGiB > clusterspec.MaxRootVolumeGiB) {
		fail("root_volume_size_gib")
	}
	if _, err := pki.ParseAlgorithm(string(s.KeyAlgorithm)); err != nil || s.KeyAlgorithm == "" {
		fail("key_algorithm")
	}
	if !slices.Contains(clusterfacts.CNIs(), s.CNI) {
		fail("cni")
	}
}

// TestUncleanPathsAnswerJSON404: ServeMux would redirect these; every
// function answers them as unknown routes, in JSON.
func TestUncleanPathsAnswerJSON404(t *testing.T) {
	s := &Server{}
	for _, fn := range Functions() {
		h := s.Handler(fn)
		for _, p := range []string{"/clusters/../1", "/clusters//1", "/clusters/./1", "//clusters", "/bootstrap/control-plane/../1",
			"/bootstrap/control-plane//1", "/bootstrap/control-plane/./1", "/health/..", "/health/."} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.URL.Path = p
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"code":"not_found"`) || rec.Header().Get("Location") != "" {
				t.Errorf("%s %s = %d %q (Location %q)", fn.Name, p, rec.Code, rec.Body, rec.Header().Get("Location"))
			}
		}
	}
}

// FuzzStatusReportBody runs a status report's body through the handler's
// decoder and progress's validator: never a panic, every refusal a 400 or
// 413 apperr, and every accepted report a phase a VM may report with a
// message PostgreSQL stores within the limit.
func FuzzStatusReportBody(f *testing.F) {
	for _, s := range []string{
		`{"phase":"etcd_started"}`, `{"phase":"failed","message":"step x failed\nlast lines"}`,
		`{"phase":"bundle_fetched"}`, `{"phase":"pending"}`, `{"phase":"READY"}`, `{"phase":""}`, `{"message":"m"}`,
		`{"phase":"failed","message":"a\u0000b"}`, `{"phase":"failed","message":"\xff\xfe"}`, `{"phase":1}`,
		`{"phase":"ready","org_id":2}`, `{`, `{} {}`, ``, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/bootstrap/control-plane/1/status", bytes.NewReader(body))
		req.Body = http.MaxBytesReader(rec, req.Body, MaxBodyBytes)
		var r progress.Report
		if err := decodeJSON(req, &r); err != nil {
			if e, ok := apperr.As(err); !ok || (e.Kind() != apperr.KindInvalid && e.Kind() != apperr.KindTooLarge) || e.Message == "" {
				t.Fatalf("decode error %v is not a 400/413 apperr", err)
			}
			return
		}
		phase, msg, err := r.Validate(clusterfacts.ControlPlane)
		if err != nil {
			if e, ok := apperr.As(err); !ok || e.Code != apperr.InvalidRequest || e.Message == "" {
				t.Fatalf("validation error %v is not a 400 invalid_request", err)
			}
			return
		}
		if !slices.Contains(clusterfacts.Reportable(), phase) || len(msg) > progress.MaxMessageBytes || strings.ContainsRune(msg, 0) {
			t.Fatalf("accepted phase %q with a %d-byte message", phase, len(msg))
		}
	})
}

// TestBadBytesAreRefusedAtTheEdge: a NUL or bytes that are not UTF-8 in
// any path parameter or query value of any route of any function are 400
// before the handler runs: the server here has no dependency at all, so a
// request that got past the edge to a query would panic (500).
func TestBadBytesAreRefusedAtTheEdge(t *testing.T) {
	s := &Server{Log: slog.New(slog.DiscardHandler)}
	for _, fn := range Functions() {
		h := s.Handler(fn)
		for _, r := range fn.Routes() {
			for _, c := range badBytesCases(r.Path) {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(r.Method, "/", strings.NewReader(`{}`))
				req.URL.Path, req.URL.RawQuery = c.path, c.query
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) {
					t.Errorf("%s %s %q?%q = %d %s, want 400 %s", fn.Name, r.Method, c.path, c.query, rec.Code, rec.Body, c.code)
				}
			}
		}
	}
}

type badBytesCase struct{ path, query, code string }

// badBytesCases are route's path with each parameter a NUL or not UTF-8,
// and its path with a NUL and a non-UTF-8 query value.
func badBytesCases(route string) []badBytesCase {
	plain := strings.NewReplacer("{id}", "1", "{vm_id}", "1", "{pool}", "p").Replace(route)
	cases := []badBytesCase{{plain, "limit=%00", "invalid_query"}, {plain, "cursor=%FF", "invalid_query"}, {plain, "a%00=1", "invalid_query"}}
	for _, param := range []string{"{id}", "{vm_id}", "{pool}"} {
		if !strings.Contains(route, param) {
			continue
		}
		for _, bad := range []string{"1\x00", "\xff", "p\x00q"} {
			p := strings.NewReplacer(param, bad, "{id}", "1", "{vm_id}", "1", "{pool}", "p").Replace(route)
			cases = append(cases, badBytesCase{p, "", "invalid_path"})
		}
	}
	return cases
}

// A body's strings may not spell a NUL or half a surrogate pair, nor may
// the body be other than UTF-8; every other escape and a well-formed pair
// pass.
func TestScreenJSONStrings(t *testing.T) {
	for body, bad := range map[string]bool{
		`{"a":"x\u0000"}`: true, `{"a":"\u0000"}`: true, `{"a":"\ud800"}`: true, `{"a":"\udc00"}`: true,
		`{"a":"\ud800\u0041"}`: true, `{"a":"\ud800x"}`: true, "{\"a\":\"\xff\"}": true, `{"\u0000":1}`: true,
		`{"a":"\\u0000"}`: false, `{"a":"\ud83d\ude00"}`: false, `{"a":"\u00e9\n\"\\"}`: false, `{"a":"é"}`: false,
		`{"a":"\u12"}`: false, `{"a":1}`: false, `"\`: false,
	} {
		if err := screenJSONStrings([]byte(body)); (err != nil) != bad {
			t.Errorf("%s: refused %v, want %v", body, err != nil, bad)
		}
	}
}
