package compute

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/excloud/k8sapi/internal/platformauth"
)

// These tests pin the client's wire format and error mapping against a
// scripted server; behaviour against the simulator (and Postgres) is tested
// in internal/simulator.

func ctx() context.Context { return platformauth.WithToken(context.Background(), "t") }

func TestCreateInstanceWireFormat(t *testing.T) {
	var got map[string]any
	var method, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, path = r.Method, r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		w.Write([]byte(`{"id": 42}`))
	}))
	defer srv.Close()

	id, err := NewHTTP(srv.URL, nil).CreateInstance(ctx(), Instance{
		Name: "cp-1", ZoneID: 1, SubnetID: 2, ImageID: 3, InstanceType: "e2.medium",
		AllocatePublicIPv4: true, RootVolumeSizeGiB: 40, Tags: map[string]string{"role": "control-plane"},
		Userdata: "#!/bin/sh\n",
	})
	if err != nil || id != 42 {
		t.Fatalf("CreateInstance = %d, %v", id, err)
	}
	if method != http.MethodPost || path != PathInstances {
		t.Errorf("request = %s %s", method, path)
	}
	rv, _ := got["root_volume"].(map[string]any)
	if rv["size_gib"] != float64(40) {
		t.Errorf("root_volume = %v, want {size_gib: 40}", got["root_volume"])
	}
	if sg, ok := got["security_group_ids"].([]any); !ok || len(sg) != 0 {
		t.Errorf("security_group_ids = %#v, want []", got["security_group_ids"])
	}
	for k, want := range map[string]any{"name": "cp-1", "zone_id": float64(1), "subnet_id": float64(2), "image_id": float64(3),
		"instance_type": "e2.medium", "allocate_public_ipv4": true, "userdata": "#!/bin/sh\n"} {
		if got[k] != want {
			t.Errorf("%s = %#v, want %#v", k, got[k], want)
		}
	}
}

func TestDeletesAreIdempotent(t *testing.T) {
	status := http.StatusNotFound
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := NewHTTP(srv.URL, nil)
	if err := c.DeleteInstance(ctx(), 5); err != nil {
		t.Errorf("DeleteInstance on 404 = %v, want nil", err)
	}
	if err := c.DeleteSecurityGroup(ctx(), 5); err != nil {
		t.Errorf("DeleteSecurityGroup on 404 = %v, want nil", err)
	}
	status = http.StatusInternalServerError
	err := c.DeleteInstance(ctx(), 5)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 {
		t.Errorf("DeleteInstance on 500 = %v, want *APIError 500", err)
	}
}

func TestGetInstanceNotFoundSurvivesWrapping(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"instance 9 not found"}}`))
	}))
	defer srv.Close()
	_, err := NewHTTP(srv.URL, nil).GetInstance(ctx(), 9)
	if !IsNotFound(err) {
		t.Fatalf("err = %v, want IsNotFound", err)
	}
}

func TestCreateWithoutIDIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	if _, err := NewHTTP(srv.URL, nil).CreateSecurityGroup(ctx(), SecurityGroup{Name: "x"}); err == nil {
		t.Fatal("want an error for a create answered without an id")
	}
}
