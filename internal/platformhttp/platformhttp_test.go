package platformhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/requestid"
)

func authed() context.Context {
	return platformauth.WithToken(context.Background(), "tok")
}

func TestDoSendsTokenRequestIDAndJSON(t *testing.T) {
	var gotAuth, gotRID, gotCT, gotBody, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotRID, gotCT = r.Header.Get("Authorization"), r.Header.Get(RequestIDHeader), r.Header.Get("Content-Type")
		gotPath = r.URL.EscapedPath()
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Write([]byte(`{"id": 7}`))
	}))
	defer srv.Close()

	c := New("compute", srv.URL+"/compute/", srv.Client())
	ctx := requestid.With(authed(), "rid-1")
	var out struct{ ID int64 }
	if err := c.Do(ctx, http.MethodPost, Path("/v1/x/{name}", "name", "a/b"), map[string]int{"n": 1}, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != 7 {
		t.Errorf("decoded id = %d, want 7", out.ID)
	}
	if gotAuth != "Bearer tok" || gotRID != "rid-1" || gotCT != "application/json" {
		t.Errorf("headers: auth=%q rid=%q ct=%q", gotAuth, gotRID, gotCT)
	}
	if gotBody != `{"n":1}` {
		t.Errorf("body = %q", gotBody)
	}
	if gotPath != "/compute/v1/x/a%2Fb" {
		t.Errorf("path = %q: the name must stay one escaped segment", gotPath)
	}
}

func TestDoRefusesWithoutToken(t *testing.T) {
	called := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	defer srv.Close()
	err := New("dns", srv.URL, nil).Do(context.Background(), http.MethodGet, "/", nil, nil)
	if !errors.Is(err, ErrNoToken) || called {
		t.Fatalf("err = %v, called = %v; want ErrNoToken without a call", err, called)
	}
}

func TestDoAPIErrors(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		body       string
		code, msg  string
		isNotFound bool
	}{
		{"convention", 404, `{"error":{"code":"not_found","message":"no such instance"}}`, "not_found", "no such instance", true},
		{"plain text", 502, "upstream exploded\n", "", "upstream exploded", false},
		{"empty", 500, "", "", "Internal Server Error", false},
		{"long", 400, strings.Repeat("é", 1000), "", strings.Repeat("é", 256) + "…", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			err := New("compute", srv.URL, nil).Do(authed(), http.MethodDelete, "/v1/i/1", nil, nil)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.Message != tc.msg {
				t.Errorf("got status=%d code=%q msg=%q", ae.Status, ae.Code, ae.Message)
			}
			if IsNotFound(err) != tc.isNotFound {
				t.Errorf("IsNotFound = %v", !tc.isNotFound)
			}
		})
	}
}

func TestDoTransportErrorIsNotAPIError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
	}))
	defer srv.Close()
	c := New("compute", srv.URL, &http.Client{Timeout: 20 * time.Millisecond})
	err := c.Do(authed(), http.MethodGet, "/slow", nil, nil)
	var ae *APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("err = %v, want a transport (timeout) error, not *APIError", err)
	}

	srv.Close()
	err = New("compute", srv.URL, nil).Do(authed(), http.MethodGet, "/", nil, nil)
	if err == nil || errors.As(err, &ae) || IsNotFound(err) {
		t.Fatalf("closed server: err = %v, want a transport error", err)
	}
}

func TestDoBadJSONAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>"))
	}))
	defer srv.Close()
	var out struct{}
	err := New("dns", srv.URL, nil).Do(authed(), http.MethodGet, "/", nil, &out)
	if err == nil || !strings.Contains(err.Error(), "decoding") {
		t.Fatalf("err = %v, want a decoding error", err)
	}
}

func TestPathPanicsOnUnfilledPlaceholder(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Path("/v1/{zone}/{name}", "zone", "z")
}
