package devstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/devstack/proc"
)

// The whole stack as make local runs it, in a scratch directory and its own
// database: /health and the deep check answer through the gateway and the
// real binaries, the dev tokens work and are org-scoped, stack.env is
// written, and stopping leaves no process and no stack.env behind.
func TestRunServesAndStopsCleanly(t *testing.T) {
	root, _ := filepath.Abs(projectRoot)
	local := t.TempDir()
	db := localpg.UniqueDatabaseName("k8sapi_stack")
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readyCh := make(chan Stack, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, Options{Root: root, LocalDir: local, Database: db, Port: port, Log: devtest.Logger(t), Out: io.Discard, FunctionOut: devtest.Writer{T: t}},
			func(st Stack) { readyCh <- st })
	}()
	var st Stack
	select {
	case st = <-readyCh:
	case err := <-done:
		t.Fatalf("stack failed: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("stack not ready in 3 minutes")
	}
	serverDSN := localpg.DefaultLocalPostgres
	if v := os.Getenv("DATABASE_URL"); v != "" {
		serverDSN = v
	}
	t.Cleanup(func() { _ = localpg.DropDatabase(context.Background(), serverDSN, db) })

	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", st.APIURL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/health", ""); code != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("/health: %d %s", code, body)
	}
	code, body := get("/health?deep=1", "")
	var deep struct{ Checks map[string]string }
	if code != 200 || json.Unmarshal([]byte(body), &deep) != nil || deep.Checks["postgres"] != "ok" || deep.Checks["kms"] != "ok" {
		t.Fatalf("/health?deep=1: %d %s", code, body)
	}
	if code, body := get("/clusters", st.DevToken); code != 200 {
		t.Fatalf("/clusters with DEV_TOKEN: %d %s", code, body)
	}
	if code, _ := get("/clusters", "not-a-token"); code != 401 {
		t.Fatalf("/clusters with a bad token: %d, want 401", code)
	}
	var samEnv map[string]map[string]string
	if b, err := os.ReadFile(filepath.Join(local, SAMEnvFile)); err != nil || json.Unmarshal(b, &samEnv) != nil || samEnv["Parameters"]["DATABASE_URL"] != "" ||
		samEnv["GetBundleFunction"]["DATABASE_URL"] != mustFunctionDSN(t, st.DatabaseURL, "GetBundleFunction") {
		t.Fatalf("%s: %v %v", SAMEnvFile, samEnv, err)
	}
	env, err := ReadStackEnv(filepath.Join(local, StackEnvFile))
	if err != nil || env["API_URL"] != st.APIURL || env["DEV_TOKEN_ORG2"] != st.DevTokenOrg2 || env["KMS_KEY_ID"] == "" {
		t.Fatalf("stack.env: %v %v", env, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stack did not stop in 30 s")
	}
	for _, f := range []string{StackEnvFile, SAMEnvFile} {
		if _, err := os.Stat(filepath.Join(local, f)); !os.IsNotExist(err) {
			t.Fatalf("%s left behind", f)
		}
	}
	if err := proc.HTTPAnswers(context.Background(), st.APIURL+"/health"); err == nil {
		t.Fatal("the gateway still answers")
	}
	if err := proc.HTTPAnswers(context.Background(), st.AWSEndpointURL); err == nil && os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("moto still answers")
	}
	if leftovers := processesUnder(local); len(leftovers) > 0 {
		t.Fatalf("processes left running: %v", leftovers)
	}
}

// processesUnder lists live processes whose executable lies under dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, dir) {
			if b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); !strings.Contains(string(b), ") Z ") {
				out = append(out, e.Name()+" "+exe)
			}
		}
	}
	return out
}

func mustFunctionDSN(t *testing.T, dsn, function string) string {
	t.Helper()
	fdsn, err := localpg.FunctionDSN(dsn, function)
	if err != nil {
		t.Fatal(err)
	}
	return fdsn
}
