package dbmigrate_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/dbmigrate"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// v1Node is a node as the first schema stored it: one row in etcd_nodes and
// one in apiserver_nodes, each key sealed under its per-column purpose.
type v1Node struct {
	clusterID, vmID int64
	ordinal         int
	name            string
	issued          map[pki.Name]pki.KeyPair
	sealed          map[pki.Name][]byte
}

// The first schema's tables and the purposes its code sealed their keys
// under, spelled out here as they were, not derived from today's code.
var v1Tables = []struct {
	table, purpose string
	name           pki.Name
}{
	{"etcd_nodes", "etcd-peer-key", pki.EtcdPeer},
	{"apiserver_nodes", "apiserver-key", pki.APIServer},
}

// A database holding clusters founded by the first schema migrates to the
// latest: every node becomes one kube_nodes row, every facet one
// node_identities row with the same cert and sealed bytes, the old tables
// are gone, and each moved key opens through today's keyring (real KMS
// over moto) and matches its certificate.
func TestNodeIdentitiesMigrationMovesEveryNode(t *testing.T) {
	ctx := context.Background()
	dsn, pool, env := databaseAt(t, 1)
	var nodes []v1Node
	for _, count := range []int{3, 1} {
		nodes = append(nodes, foundV1(t, pool, env, count)...)
	}
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"etcd_nodes", "apiserver_nodes"} {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || exists {
			t.Errorf("%s still exists after the migration (err %v)", table, err)
		}
	}
	assertMovedRows(t, pool, nodes)
	for _, n := range nodes {
		assertOpens(t, store.New(pool), env, n)
	}
}

// databaseAt is a fresh database at version of k8sapi's migrations (the
// platform stand-ins at their latest), a pool on it and an envelope over
// moto's KMS, for writing rows as that version's code did.
func databaseAt(t *testing.T, version int32) (string, *pgxpool.Pool, *envelope.Envelope) {
	t.Helper()
	ctx := context.Background()
	dsn := emptyDatabase(t)
	if err := dbmigrate.ApplyK8sapiTo(ctx, dsn, true, version); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	kmsClient, keyID := testenv.KMSKey(t)
	return dsn, pool, envelope.New(kmsClient, keyID, nil)
}

func emptyDatabase(t *testing.T) string { return testenv.EmptyDatabase(t, "k8sapi_v1") }

// foundV1 writes one cluster of count nodes as the first schema's code did:
// the cluster row, then both facets of each node as its InsertNode wrote
// them, and the VM's interface in the platform's table (where the first
// schema read addresses from).
func foundV1(t *testing.T, pool *pgxpool.Pool, env *envelope.Envelope, count int) []v1Node {
	t.Helper()
	c, dk, trust := v1Cluster(t, pool, env, count)
	var err error
	var out []v1Node
	for ordinal := 1; ordinal <= count; ordinal++ {
		n := v1Node{clusterID: c.ID, vmID: c.ID*100 + int64(ordinal), ordinal: ordinal,
			name: fmt.Sprintf("cp-%d.cluster-%d.internal", ordinal, c.ID), sealed: map[pki.Name][]byte{}}
		facts := pki.Subject{Name: n.name, ControlPlaneDNSName: c.ControlPlaneDNSName, ClusterDomain: c.ClusterDomain,
			IPv4: fmt.Sprintf("10.0.0.%d", ordinal)}
		if n.issued, err = (pki.Issuer{}).IssuePhase(trust, pki.PhaseFounding, facts); err != nil {
			t.Fatal(err)
		}
		for _, v1 := range v1Tables {
			if n.sealed[v1.name], err = dk.Seal(envelope.Purpose{Name: v1.purpose, VMID: n.vmID}, n.issued[v1.name].KeyPEM); err != nil {
				t.Fatal(err)
			}
		}
		insertV1Node(t, pool, n)
		insertV1Interface(t, pool, n)
		out = append(out, n)
	}
	return out
}

func v1Cluster(t *testing.T, pool *pgxpool.Pool, env *envelope.Envelope, count int) (store.Cluster, *envelope.DataKey, *pki.Trust) {
	t.Helper()
	ctx := context.Background()
	id, err := store.New(pool).ReserveClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("exk8s-7-%x", id)
	c := store.Cluster{ID: id, OrgID: 7, ProjectID: 1, Name: name, ControlPlaneDNSName: name + ".k8s.example",
		Status: store.StatusActive, KeyAlgorithm: string(pki.ECDSAP256), KubernetesVersion: "v1.35.4",
		ClusterDomain: "cluster.local", ServiceCIDR: "10.96.0.0/12", PodCIDR: "172.16.0.0/12", ControlPlaneCount: count,
		SecurityGroupIDs: []int64{1}}
	trust, err := (pki.Issuer{}).NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	dk, err := env.NewDataKey(ctx, keyring.Scope(&c))
	if err != nil {
		t.Fatal(err)
	}
	c.WrappedDataKey, c.KMSKeyID = dk.Wrapped, dk.KeyID
	if err := keyring.SealTrust(dk, trust, &c); err != nil {
		t.Fatal(err)
	}
	// The first schema's InsertCluster, spelled out: today's store writes
	// columns the first schema does not have.
	if _, err := pool.Exec(ctx, `INSERT INTO kube_clusters (id, org_id, project_id, name, control_plane_dns_name,
		status, key_algorithm, kubernetes_version, cluster_domain, service_cidr, pod_cidr, control_plane_count,
		security_group_ids, kms_key_id, wrapped_data_key, ca_cert, ca_key_sealed, etcd_ca_cert, etcd_ca_key_sealed,
		front_proxy_ca_cert, front_proxy_ca_key_sealed, service_account_pub, service_account_key_sealed)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23)`,
		c.ID, c.OrgID, c.ProjectID, c.Name, c.ControlPlaneDNSName, c.Status, c.KeyAlgorithm, c.KubernetesVersion,
		c.ClusterDomain, c.ServiceCIDR, c.PodCIDR, c.ControlPlaneCount, c.SecurityGroupIDs, c.KMSKeyID,
		c.WrappedDataKey, c.CACert, c.CAKeySealed, c.EtcdCACert, c.EtcdCAKeySealed, c.FrontProxyCACert,
		c.FrontProxyCAKeySealed, c.ServiceAccountPub, c.ServiceAccountKeySealed); err != nil {
		t.Fatal(err)
	}
	return c, dk, trust
}

// insertV1Interface is the VM's address as the platform recorded it.
func insertV1Interface(t *testing.T, pool *pgxpool.Pool, n v1Node) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO vms (id, org_id, name, zone_id, subnet_id, image_id, instance_type)
		VALUES ($1, 7, $2, 1, 1, 1, 'c1.large')`, n.vmID, n.name); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO interfaces (vm_id, ipv4, is_primary) VALUES ($1, $2, true)`,
		n.vmID, v1Address(n)); err != nil {
		t.Fatal(err)
	}
}

func v1Address(n v1Node) string { return fmt.Sprintf("10.0.0.%d", n.ordinal) }

// insertV1Node is the first schema's InsertNode: one row per facet.
func insertV1Node(t *testing.T, pool *pgxpool.Pool, n v1Node) {
	t.Helper()
	for _, v1 := range v1Tables {
		if _, err := pool.Exec(context.Background(), `INSERT INTO `+v1.table+`
			(kube_cluster_id, vm_id, ordinal, node_name, cert, key_sealed) VALUES ($1, $2, $3, $4, $5, $6)`,
			n.clusterID, n.vmID, n.ordinal, n.name, string(n.issued[v1.name].CertPEM), n.sealed[v1.name]); err != nil {
			t.Fatal(err)
		}
	}
}

func assertMovedRows(t *testing.T, pool *pgxpool.Pool, want []v1Node) {
	t.Helper()
	ctx := context.Background()
	for _, n := range want {
		var clusterID int64
		var ordinal int
		var name, ipv4 string
		if err := pool.QueryRow(ctx, `SELECT kube_cluster_id, ordinal, node_name, ipv4 FROM kube_nodes WHERE vm_id = $1`,
			n.vmID).Scan(&clusterID, &ordinal, &name, &ipv4); err != nil {
			t.Fatalf("vm %d: no kube_nodes row: %v", n.vmID, err)
		}
		if clusterID != n.clusterID || ordinal != n.ordinal || name != n.name {
			t.Errorf("vm %d moved as (%d, %d, %q), want (%d, %d, %q)", n.vmID, clusterID, ordinal, name, n.clusterID, n.ordinal, n.name)
		}
		// Migration 004 copied the platform's address onto the node.
		if ipv4 != v1Address(n) {
			t.Errorf("vm %d: kube_nodes.ipv4 = %q, want the interface's %q", n.vmID, ipv4, v1Address(n))
		}
		assertMovedIdentities(t, pool, n)
	}
	var count int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM kube_nodes`).Scan(&count); err != nil || count != len(want) {
		t.Errorf("%d kube_nodes rows, want %d (err %v)", count, len(want), err)
	}
}

func assertMovedIdentities(t *testing.T, pool *pgxpool.Pool, n v1Node) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT i.name, i.cert, i.key_sealed FROM node_identities i
		JOIN kube_nodes n ON n.id = i.node_id WHERE n.vm_id = $1 ORDER BY i.name`, n.vmID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []pki.Name
	for rows.Next() {
		var name, cert string
		var sealed []byte
		if err := rows.Scan(&name, &cert, &sealed); err != nil {
			t.Fatal(err)
		}
		names = append(names, pki.Name(name))
		if cert != string(n.issued[pki.Name(name)].CertPEM) || !bytes.Equal(sealed, n.sealed[pki.Name(name)]) {
			t.Errorf("vm %d %s: cert or sealed key changed in the move", n.vmID, name)
		}
	}
	// The names the migration wrote are exactly the cert table's stored
	// identities, so today's code finds every one.
	want := slices.Sorted(slices.Values(pki.Names(pki.PhaseFounding)))
	if !slices.Equal(names, want) {
		t.Errorf("vm %d identities %v, want the cert table's %v", n.vmID, names, want)
	}
}

// assertOpens loads n as a bundle fetch does and opens its moved keys.
func assertOpens(t *testing.T, s *store.Store, env *envelope.Envelope, n v1Node) {
	t.Helper()
	ctx := context.Background()
	topo, err := s.TopologyForVM(ctx, n.vmID)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := keyring.Open(ctx, env, &topo.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(topo.Nodes, func(m store.Node) bool { return m.VMID == n.vmID })
	ids, err := keyring.OpenIdentities(opened.DataKey, topo.Nodes[i])
	if err != nil {
		t.Fatalf("vm %d: a moved key does not open: %v", n.vmID, err)
	}
	for name, kp := range ids {
		if !bytes.Equal(kp.KeyPEM, n.issued[name].KeyPEM) {
			t.Errorf("vm %d %s: opened key differs from the one sealed", n.vmID, name)
		}
		if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
			t.Errorf("vm %d %s: key does not match its cert: %v", n.vmID, name, err)
		}
	}
}
