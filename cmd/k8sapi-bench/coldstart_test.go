package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
	"github.com/excloud/k8sapi/internal/wiring"
)

// Every function of template.yaml gets, from a running stack's stack.env,
// what its main requires: each configuration variable its source names,
// and the service token if it asks for one. A cold start that would exit
// at its first line fails here, not in `make bench`.
func TestFunctionEnvCarriesWhatMainRequires(t *testing.T) {
	root := filepath.Join("..", "..")
	tmpl, err := samtemplate.LoadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st := stack{env: stackEnv(devstack.Stack{APIURL: "http://127.0.0.1:3000",
		DatabaseURL: "postgres://postgres@127.0.0.1:5432/k8sapi_local?sslmode=disable", SimURL: "http://127.0.0.1:3001",
		AWSEndpointURL: "http://127.0.0.1:3002", KMSKeyID: "key", DBSecretARN: "arn:aws:secretsmanager:local:0:secret:db",
		DevToken: "dev", DevTokenOrg2: "dev2", ServiceToken: "service", SnapshotBucket: "k8sapi-local-etcd-snapshots"})}
	for _, fn := range tmpl.Functions {
		env, err := functionEnv(st, fn, "/opt/bootstrap", "127.0.0.1:9001")
		if err != nil {
			t.Fatalf("%s: %v", fn.LogicalID, err)
		}
		cfg, err := config.FromLookup(lookupIn(env))
		if err != nil {
			t.Errorf("%s: configuration: %v", fn.LogicalID, err)
			continue
		}
		names, wantsToken := mainRequires(t, filepath.Join(root, fn.CodeURI, "main.go"))
		if err := cfg.Require(names...); err != nil {
			t.Errorf("%s: %v", fn.LogicalID, err)
		}
		if _, err := (&wiring.App{Config: cfg}).ServiceToken(context.Background()); wantsToken && err != nil {
			t.Errorf("%s: %v", fn.LogicalID, err)
		}
	}
}

// stackEnv is st as its stack.env file holds it.
func stackEnv(st devstack.Stack) map[string]string {
	env := map[string]string{}
	for _, kv := range st.Env() {
		env[kv[0]] = kv[1]
	}
	return env
}

func lookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// mainRequires reads a function's main.go: the configuration variables its
// string literals name (what it passes wiring.Serve or wiring.Load to
// require), and whether it calls ServiceToken.
func mainRequires(t *testing.T, path string) (names []string, serviceToken bool) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && slices.Contains(config.Variables(), s) {
				names = append(names, s)
			}
		case *ast.SelectorExpr:
			serviceToken = serviceToken || n.Sel.Name == "ServiceToken"
		}
		return true
	})
	return names, serviceToken
}
