package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"k8s.io/client-go/tools/clientcmd"
)

// issued is the API's kubeconfig of cluster name, named as the route
// names it (cluster = context = name, user = name-admin).
func issued(name, server string) apitypes.IssuedKubeconfig {
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: " + name + "\n  cluster:\n    server: " + server +
		"\nusers:\n- name: " + name + "-admin\n  user:\n    token: t-" + name +
		"\ncontexts:\n- name: " + name + "\n  context:\n    cluster: " + name + "\n    user: " + name + "-admin\ncurrent-context: " + name + "\n"
	return apitypes.IssuedKubeconfig{Name: name, Kubeconfig: kc, User: name + "-admin", Context: name, Serial: "ab", ExpiresAt: now.Add(3600e9)}
}

func TestKubeconfigMergeKeepsOtherClusters(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/kubeconfig", reply{status: 201, body: mustJSON(issued("exk8s-1-5", "https://a:6443"))})
	f.on("POST /clusters/6/kubeconfig", reply{status: 201, body: mustJSON(issued("exk8s-1-6", "https://b:6443"))})
	path := filepath.Join(t.TempDir(), "kube", "config")
	env := map[string]string{"KUBECONFIG": path + string(os.PathListSeparator) + "/elsewhere"}
	runCLI(t, f, env, "kubeconfig", "5", "--static", "--ttl", "1h", "--merge").want(t, 0)
	r := runCLI(t, f, env, "kubeconfig", "6", "--static", "--merge")
	r.wantOut(t, "merged cluster exk8s-1-6, user exk8s-1-6-admin and context exk8s-1-6 into "+path+"; current context exk8s-1-6, expires 2026-11-24T14:00:00Z")
	if got := f.callsTo("POST /clusters/5/kubeconfig")[0].body; got != `{"ttl":"1h0m0s"}` {
		t.Fatalf("body %s", got)
	}
	if got := f.callsTo("POST /clusters/6/kubeconfig")[0].body; got != "" {
		t.Fatalf("no --ttl sent %q", got)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "exk8s-1-6" || cfg.AuthInfos["exk8s-1-5-admin"] == nil || cfg.Contexts["exk8s-1-5"].AuthInfo != "exk8s-1-5-admin" ||
		cfg.Clusters["exk8s-1-5"].Server != "https://a:6443" || cfg.Clusters["exk8s-1-6"].Server != "https://b:6443" {
		t.Fatalf("merged config %+v", cfg)
	}
	assertMode0600(t, path)
}

func TestKubeconfigMergeReplacesSameNamesAndKeepsForeignEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	foreign := "apiVersion: v1\nkind: Config\nclusters:\n- name: kind\n  cluster:\n    server: https://kind:6443\n" +
		"users:\n- name: kind-user\n  user:\n    token: k\ncontexts:\n- name: kind\n  context:\n    cluster: kind\n    user: kind-user\ncurrent-context: kind\n"
	os.WriteFile(path, []byte(foreign), 0o644)
	for _, server := range []string{"https://old:6443", "https://new:6443"} {
		if err := mergeKubeconfigFile(path, []byte(issued("exk8s-1-5", server).Kubeconfig)); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := clientcmd.LoadFromFile(path)
	if len(cfg.Clusters) != 2 || cfg.Clusters["exk8s-1-5"].Server != "https://new:6443" || cfg.Clusters["kind"] == nil || cfg.Contexts["kind"] == nil {
		t.Fatalf("%+v", cfg)
	}
	assertMode0600(t, path)
}

func TestKubeconfigMergeRefusesAFileThatDoesNotParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	os.WriteFile(path, []byte("clusters: {not: [a list"), 0o600)
	if err := mergeKubeconfigFile(path, []byte(issued("exk8s-1-5", "https://a").Kubeconfig)); err == nil {
		t.Fatal("merged into a broken file")
	}
	if b, _ := os.ReadFile(path); string(b) != "clusters: {not: [a list" {
		t.Fatal("the broken file was changed")
	}
}

func TestKubeconfigToFileAndStdout(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/kubeconfig", reply{status: 201, body: mustJSON(issued("exk8s-1-5", "https://a:6443"))})
	path := filepath.Join(t.TempDir(), "exk8s-1-5.kubeconfig")
	runCLI(t, f, nil, "kubeconfig", "5", "--static", "--output-file", path).wantOut(t, "wrote "+path+": context exk8s-1-5, expires 2026-11-24T14:00:00Z")
	assertMode0600(t, path)
	r := runCLI(t, f, nil, "kubeconfig", "5", "--static")
	if !strings.HasPrefix(r.stdout, "apiVersion: v1\nkind: Config\n") {
		t.Fatal(r.stdout)
	}
	runCLI(t, f, nil, "kubeconfig", "5", "--static", "--merge", "--output-file", path).want(t, 2)
	runCLI(t, f, nil, "kubeconfig", "5", "--static", "--ttl", "an hour").want(t, 2)
	// --ttl is a static kubeconfig's: the exec entry's certificates renew.
	runCLI(t, f, nil, "kubeconfig", "5", "--ttl", "1h").want(t, 2)
	if n := len(f.callsTo("POST /clusters/5/credentials")); n != 0 {
		t.Fatalf("%d credentials asked for by refused command lines", n)
	}
}

func TestKubeconfigDefaultsToHomeKubeConfig(t *testing.T) {
	if got := kubeconfigPath(envMap{}.get, "/home/op"); got != filepath.Join("/home/op", ".kube", "config") {
		t.Fatal(got)
	}
}

func assertMode0600(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, st.Mode(), err)
	}
}

// -o is a format, never a file: `kubeconfig 5 -o json` once wrote an
// admin credential to ./json.
func TestKubeconfigOutputIsAFormatNotAFile(t *testing.T) {
	f := newFakeAPI(t)
	dir := t.TempDir()
	t.Chdir(dir)
	r := runCLI(t, f, nil, "kubeconfig", "5", "-o", "json")
	r.want(t, 2)
	if !strings.Contains(r.stderr, `unknown output format "json": -o is one of yaml (a table when absent); to write the kubeconfig to a file: --output-file FILE`) {
		t.Fatalf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "json")); err == nil || len(f.calls) != 0 {
		t.Fatal("-o json wrote a file or asked for a credential")
	}
}
