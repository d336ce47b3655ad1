package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/testenv"
)

// refusals are statements a function's role must not be able to run, each
// a right its queries never need (migration 011 says what they do need).
var refusals = []struct{ function, sql string }{
	{"GetBundleFunction", `DELETE FROM kube_clusters`},
	{"GetBundleFunction", `UPDATE kube_clusters SET status = 'deleted'`},
	{"GetBundleFunction", `SELECT count(*) FROM bootstrap_fetches`},
	{"GetBundleFunction", `UPDATE kube_nodes SET bootstrap_opened_at = now()`},
	{"GetBundleFunction", `SELECT count(*) FROM principal_tokens WHERE description <> ''`},
	{"GetBundleFunction", `SELECT count(*) FROM vms`},
	{"GetBundleFunction", `SELECT count(*) FROM admin_kubeconfigs`},
	{"HealthFunction", `SELECT count(*) FROM kube_clusters`},
	{"HealthFunction", `SELECT count(*) FROM principal_tokens`},
	// It intends a pool's workers (migration 017), never a node's phase or VM.
	{"ClustersFunction", `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name, phase) VALUES (1, 9, 'x', 'ready')`},
	{"ClustersFunction", `UPDATE kube_nodes SET certs_signed_window = now()`},
	{"GetBundleFunction", `UPDATE node_pools SET count = 0`},
	{"GetBundleFunction", `DELETE FROM kube_nodes`},
	{"CreateClusterFunction", `INSERT INTO node_pools (kube_cluster_id, name, count, instance_type, image_id, subnet_id, state) VALUES (1, 'p', 1, 't', 1, 1, 'active')`},
	{"ClustersFunction", `DELETE FROM admin_kubeconfigs`},
	{"ClustersFunction", `INSERT INTO admin_kubeconfigs (kube_cluster_id, serial, issued_at, expires_at, issued_by, request_id) VALUES (1, 'a', now(), now() + interval '1h', 'x', '')`},
	{"ClustersFunction", `UPDATE kube_clusters SET org_id = 2`},
	{"ClustersFunction", `SELECT count(*) FROM imds_tokens`},
	{"CreateClusterFunction", `DELETE FROM kube_nodes`},
	{"CreateClusterFunction", `UPDATE kube_clusters SET org_id = 2`},
	{"CreateClusterFunction", `INSERT INTO bootstrap_fetches (node_id, vm_id, request_id, outcome, fetched_at) VALUES (1, 1, 'r', 'served', now())`},
	{"CreateClusterFunction", `SELECT count(*) FROM admin_kubeconfigs`},
	{"CreateClusterFunction", `UPDATE admin_kubeconfigs SET expires_at = now() + interval '1 year'`},
	{"ReconcilerFunction", `SELECT count(*) FROM principal_tokens`},
	{"ReconcilerFunction", `INSERT INTO kube_clusters (org_id) VALUES (1)`},
	{"ReconcilerFunction", `TRUNCATE kube_clusters`},
	{"ReconcilerFunction", `INSERT INTO admin_kubeconfigs (kube_cluster_id, serial, issued_at, expires_at, issued_by, request_id) VALUES (1, 'a', now(), now() + interval '1h', 'x', '')`},
	{"ReconcilerFunction", `CREATE TABLE sneaky (id int)`},
	{"GetBundleFunction", `ALTER TABLE kube_clusters ADD COLUMN sneaky int`},
	{"GetBundleFunction", `SET ROLE k8sapi_clusters`},
	// A node records its health reports (migration 028), nothing of the
	// remediation; the reconciler appends decisions to the trail, never
	// rewrites it.
	{"GetBundleFunction", `UPDATE kube_clusters SET unhealthy_after_seconds = 0`},
	{"GetBundleFunction", `UPDATE kube_nodes SET retiring = true`},
	{"ReconcilerFunction", `UPDATE audit_events SET reason = ''`},
	{"ReconcilerFunction", `DELETE FROM audit_events`},
	{"ReconcilerFunction", `UPDATE kube_nodes SET health_reported_at = now()`},
}

// Each function's database user is refused what its role was not granted:
// a taken-over bundle function cannot delete a cluster or read the fetch
// log, the health function reads no table, no function changes the schema
// or takes another function's role.
func TestFunctionRolesAreRestricted(t *testing.T) {
	dsn := testenv.Postgres(t)
	for _, r := range refusals {
		conn := connectAs(t, dsn, r.function)
		_, err := conn.Exec(context.Background(), r.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: %s: %v, want insufficient_privilege (42501)", r.function, r.sql, err)
		}
	}
}

// Each function's user is itself and a member of its own role only, so the
// stack's function pools (testenv.FunctionDSN) really run as the function.
func TestFunctionUsersHoldOnlyTheirRole(t *testing.T) {
	dsn := testenv.Postgres(t)
	for fn, role := range dbroles.Functions {
		conn := connectAs(t, dsn, fn)
		var user string
		var roles []string
		err := conn.QueryRow(context.Background(), `SELECT current_user, array(
			SELECT r.rolname FROM pg_roles r
			WHERE r.rolname LIKE 'k8sapi\_%' AND r.rolname <> current_user AND pg_has_role(current_user, r.oid, 'USAGE')
			ORDER BY 1)`).Scan(&user, &roles)
		if err != nil {
			t.Fatal(err)
		}
		if user != dbroles.Login(role) || len(roles) != 1 || roles[0] != role {
			t.Errorf("%s connects as %s holding %v, want %s holding [%s]", fn, user, roles, dbroles.Login(role), role)
		}
	}
}

func connectAs(t *testing.T, dsn, function string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testenv.FunctionDSN(t, dsn, function))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
