package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

func decodeFounding(t *testing.T, contentType, body string) (string, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/clusters", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	var req clusterspec.Request
	e, ok := apperr.As(decodeJSON(r, &req))
	if !ok {
		return "", ""
	}
	return e.Code.String(), e.Message
}

func TestABodyThatIsNotJSONIsA415(t *testing.T) {
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json-seq", "nonsense;;"} {
		if code, _ := decodeFounding(t, ct, `{"subnet_id":1}`); code != "unsupported_media_type" {
			t.Errorf("Content-Type %q: code %q, want unsupported_media_type", ct, code)
		}
	}
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if code, msg := decodeFounding(t, ct, `{"subnet_id":1}`); code != "" {
			t.Errorf("Content-Type %q: %s %s, want it read", ct, code, msg)
		}
	}
}

func TestDuplicateKeysAreRefused(t *testing.T) {
	for _, body := range []string{
		`{"subnet_id":1,"subnet_id":2}`,
		`{"subnet_id":1,"security_group_ids":[1],"security_group_ids":[2]}`,
	} {
		if code, msg := decodeFounding(t, "", body); code != "invalid_json" || !strings.Contains(msg, "twice") {
			t.Errorf("%s: %s %q, want invalid_json naming the key", body, code, msg)
		}
	}
	if code, msg := decodeFounding(t, "", `{"subnet_id":1,"control_plane_count":1}`); code != "" {
		t.Errorf("distinct keys: %s %s", code, msg)
	}
}

func TestDuplicateKeysInNestedObjectsAreFound(t *testing.T) {
	err := refuseDuplicateKeys([]byte(`{"a":[{"b":1},{"c":{"d":1,"d":2}}]}`))
	if e, ok := apperr.As(err); !ok || !strings.Contains(e.Message, `"d"`) {
		t.Errorf("= %v, want the key d named", err)
	}
	for _, body := range []string{`{"a":1}{"a":1}`, `[1,`, `{"a":}`, `"x"`, `{"a":{"b":1},"b":2}`} {
		if err := refuseDuplicateKeys([]byte(body)); err != nil {
			t.Errorf("%s: %v, want no duplicate found", body, err)
		}
	}
}

func TestTypeErrorsSpeakJSON(t *testing.T) {
	cases := map[string]string{
		`{"subnet_id":"one"}`:            "subnet_id: must be an integer",
		`["an","array"]`:                 "the body: must be an object",
		`{"ssh_pubkey":3}`:               "ssh_pubkey: must be a string",
		`{"allocate_public_ipv4":"yes"}`: "allocate_public_ipv4: must be true or false",
	}
	for body, want := range cases {
		if _, msg := decodeFounding(t, "", body); msg != want {
			t.Errorf("%s: %q, want %q", body, msg, want)
		}
	}
}
