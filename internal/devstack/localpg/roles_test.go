package localpg

import "testing"

// A function's DSN names its own user and keeps the server and database,
// in both DSN forms pgx accepts; a function without a role is an error.
func TestFunctionDSN(t *testing.T) {
	cases := map[string]string{
		"postgres://postgres:pw@127.0.0.1:5432/k8sapi_local?sslmode=disable": "postgres://k8sapi_get_bundle_login@127.0.0.1:5432/k8sapi_local?sslmode=disable",
		"host=127.0.0.1 user=postgres dbname=k8sapi_local":                   "host=127.0.0.1 user=postgres dbname=k8sapi_local user=k8sapi_get_bundle_login password=''",
	}
	for in, want := range cases {
		if got, err := FunctionDSN(in, "GetBundleFunction"); err != nil || got != want {
			t.Errorf("FunctionDSN(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := FunctionDSN(cases[""], "NoSuchFunction"); err == nil {
		t.Error("a function without a database role got a DSN")
	}
}
