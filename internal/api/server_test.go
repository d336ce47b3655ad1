package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A handler that panics answers 500 internal and logs where it panicked.
func TestPanicIsLoggedWithItsStack(t *testing.T) {
	var log bytes.Buffer
	s := &Server{Log: slog.New(slog.NewJSONHandler(&log, nil))} // no Auth: the handler panics
	rec := httptest.NewRecorder()
	s.Handler(ClustersFunction).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"internal"`) {
		t.Fatalf("= %d %s, want 500 internal", rec.Code, rec.Body)
	}
	if !strings.Contains(log.String(), `"stack":"goroutine`) || !strings.Contains(log.String(), "listClusters") {
		t.Errorf("the panic's log line has no stack naming the handler:\n%s", log.String())
	}
}
