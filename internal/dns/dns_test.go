package dns

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/excloud/k8sapi/internal/platformauth"
)

// Wire format and error mapping against a scripted server; behaviour against
// the simulator is tested in internal/simulator.

func ctx() context.Context { return platformauth.WithToken(context.Background(), "t") }

func TestUpsertAWireFormat(t *testing.T) {
	var got Record
	var method, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, path = r.Method, r.URL.EscapedPath()
		json.NewDecoder(r.Body).Decode(&got)
	}))
	defer srv.Close()
	if err := NewHTTP(srv.URL, nil).UpsertA(ctx(), "k8s.example", "exk8s-1-ab", "10.0.1.2", 60); err != nil {
		t.Fatal(err)
	}
	want := Record{ZoneName: "k8s.example", Name: "exk8s-1-ab", Type: "A", Value: "10.0.1.2", TTL: 60}
	if method != http.MethodPut || path != "/v1/zones/k8s.example/records/A/exk8s-1-ab" || got != want {
		t.Errorf("sent %s %s %+v", method, path, got)
	}
}

func TestUpsertARejectsBadInputWithoutCalling(t *testing.T) {
	called := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	defer srv.Close()
	c := NewHTTP(srv.URL, nil)
	for _, tc := range []struct {
		zone, name, ip string
		ttl            int
	}{
		{"z", "n", "::1", 60}, {"z", "n", "10.0.0.256", 60}, {"", "n", "10.0.0.1", 60}, {"z", "n", "10.0.0.1", 0},
	} {
		if err := c.UpsertA(ctx(), tc.zone, tc.name, tc.ip, tc.ttl); err == nil {
			t.Errorf("UpsertA(%+v) = nil, want an error", tc)
		}
	}
	if called {
		t.Error("bad input reached the API")
	}
}

func TestDeleteAIdempotent(t *testing.T) {
	status := http.StatusNotFound
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	c := NewHTTP(srv.URL, nil)
	if err := c.DeleteA(ctx(), "z", "n"); err != nil {
		t.Errorf("404: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := c.DeleteA(ctx(), "z", "n"); err == nil {
		t.Error("503: want an error")
	}
}
