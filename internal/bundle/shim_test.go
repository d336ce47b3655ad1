package bundle

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserdataShimWritesBundle runs the rendered shim against a fake IMDS
// and k8sapi with EXK8S_ROOT and EXK8S_SKIP_HOST_SETUP, and checks it wrote
// every file with its content and mode.
func TestUserdataShimWritesBundle(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	fx := loadFixtures(t)
	c, nodes := testCluster()
	r := newTestRenderer(t)
	b, err := r.Render(fx.input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	// Content a naive shell loop would mangle.
	b.Files = append(b.Files, File{Path: "/etc/exk8s/config/zz-odd", Mode: 0o640, Content: "no trailing newline\n\n$(touch /tmp/pwned) 'q' \"d\" \\ \t"})
	body, err := json.Marshal(b.Response())
	if err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	imds := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get("X-exc-imds-token") != "imds-session" {
				http.Error(w, "no imds token", http.StatusUnauthorized)
				return
			}
			next(w, req)
		}
	}
	mux.HandleFunc("GET /imds/token", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("imds-session")) })
	mux.HandleFunc("GET /imds/latest/identity/node-identity", imds(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"node_id": 102}`))
	}))
	mux.HandleFunc("GET /imds/latest/identity/access-token", imds(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"access_token": "principal-token"}`))
	}))
	mux.HandleFunc("GET /api/bootstrap/control-plane/{vm}", imds(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer principal-token" || req.PathValue("vm") != "102" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "userdata.sh")
	if err := os.WriteFile(shim, []byte(ud), 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	cmd := exec.Command("bash", shim)
	cmd.Env = append(os.Environ(),
		"EXC_IMDS_BASE_URL="+srv.URL+"/imds",
		"EXK8S_BOOTSTRAP_BASE_URL="+srv.URL+"/api",
		"EXK8S_ROOT="+root,
		"EXK8S_SKIP_HOST_SETUP=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shim failed: %v\n%s", err, out)
	}
	for _, f := range b.Files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("shim did not write %s: %v", f.Path, err)
			continue
		}
		if string(got) != f.Content {
			t.Errorf("%s: written content differs", f.Path)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != f.Mode {
			t.Errorf("%s: written mode %04o, want %04o", f.Path, st.Mode().Perm(), f.Mode)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/log/exk8s/bootstrap-userdata.log")); err != nil {
		t.Errorf("shim log not under EXK8S_ROOT: %v", err)
	}
	if strings.Contains(string(out), "principal-token") || strings.Contains(string(out), "imds-session") {
		t.Errorf("shim logged a token:\n%s", out)
	}
}
