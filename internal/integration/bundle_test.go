package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

type bundleBody struct {
	ClusterID             int64                `json:"cluster_id"`
	VMID                  int64                `json:"vm_id"`
	NodeName              string               `json:"node_name"`
	IsInitialControlPlane bool                 `json:"is_initial_control_plane"`
	EtcdInitialCluster    string               `json:"etcd_initial_cluster"`
	SuggestedDNSRecords   []apitypes.DNSRecord `json:"suggested_dns_records"`
	Files                 map[string]string    `json:"files"`
	FileModes             map[string]string    `json:"file_modes"`
}

func TestEveryVMFetchesItsOwnBundle(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	wantFiles := []string{
		"/etc/exk8s/pki/ca.pem", "/etc/exk8s/pki/etcd-ca.pem", "/etc/exk8s/pki/front-proxy-ca.pem",
		"/etc/exk8s/pki/etcd-peer-key.pem", "/etc/exk8s/pki/apiserver-key.pem", "/etc/exk8s/pki/service-account-key.pem",
		"/etc/exk8s/kubeconfig/kubelet.kubeconfig", "/usr/local/bin/exk8s-imds-guard.sh",
		"/etc/systemd/system/exk8s-imds-guard.service",
		"/etc/exk8s/config/cluster.env", "/var/lib/kubelet/config.yaml", "/etc/systemd/system/etcd.service",
		"/etc/systemd/system/kubelet.service", "/etc/kubernetes/manifests/kube-apiserver.yaml",
		"/etc/kubernetes/manifests/kube-controller-manager.yaml", "/etc/kubernetes/manifests/kube-scheduler.yaml",
		"/etc/cni/net.d/10-exk8s.conflist", "/etc/exk8s/config/cilium-values.yaml",
		"/etc/exk8s/manifests/kube-proxy.yaml", "/etc/exk8s/manifests/coredns.yaml",
		"/usr/local/bin/exk8s-install-prereqs.sh", "/usr/local/bin/exk8s-bootstrap-control-plane.sh",
		"/usr/local/bin/exk8s-install-cluster-addons.sh", "/usr/local/bin/exk8s-progress.sh",
	}
	apiserverKeys := map[string]bool{}
	for i, vmID := range res.ControlPlaneVMIDs {
		imds, access := s.VMCredentials(vmID)
		r := s.FetchBundle(vmID, imds, access)
		if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("vm %d: %d %q %s", vmID, r.Status, r.Header.Get("Cache-Control"), r.Body)
		}
		var b bundleBody
		r.JSON(t, &b)
		for _, f := range wantFiles {
			if b.Files[f] == "" {
				t.Errorf("vm %d: missing %s", vmID, f)
			}
		}
		// The addons' system:masters identity: the initial node's only.
		const admin = "/etc/exk8s/kubeconfig/admin.kubeconfig"
		if initial := i == 0; (b.Files[admin] != "") != initial {
			t.Errorf("vm %d (initial %v): admin.kubeconfig present %v", vmID, initial, b.Files[admin] != "")
		}
		if b.FileModes["/etc/exk8s/pki/apiserver-key.pem"] != "0600" || b.FileModes["/usr/local/bin/exk8s-bootstrap-control-plane.sh"] != "0755" ||
			b.FileModes["/etc/exk8s/pki/ca.pem"] != "0644" {
			t.Errorf("vm %d: modes %v", vmID, b.FileModes)
		}
		if b.IsInitialControlPlane != (i == 0) || strings.Contains(b.Files["/etc/exk8s/config/cluster.env"], "IS_INITIAL_CONTROL_PLANE=true") != (i == 0) {
			t.Errorf("vm %d (ordinal %d): initial=%v", vmID, i+1, b.IsInitialControlPlane)
		}
		if strings.Count(b.EtcdInitialCluster, "https://") != 3 {
			t.Errorf("etcd initial cluster = %q", b.EtcdInitialCluster)
		}
		// One rule for the control-plane name: the bundle suggests what
		// founding answered.
		if !slices.Equal(b.SuggestedDNSRecords, res.SuggestedDNSRecords) {
			t.Errorf("vm %d suggests %+v, founding suggested %+v", vmID, b.SuggestedDNSRecords, res.SuggestedDNSRecords)
		}
		// The stored serving key is the same on every fetch; a node never
		// receives a CA key.
		key := b.Files["/etc/exk8s/pki/apiserver-key.pem"]
		if apiserverKeys[key] {
			t.Errorf("vm %d got another node's apiserver key", vmID)
		}
		apiserverKeys[key] = true
		again := s.FetchBundle(vmID, imds, access)
		var b2 bundleBody
		again.JSON(t, &b2)
		if b2.Files["/etc/exk8s/pki/apiserver-key.pem"] != key {
			t.Errorf("vm %d: stored serving key changed between fetches", vmID)
		}
		if _, ok := b.Files["/etc/exk8s/pki/ca-key.pem"]; ok {
			t.Errorf("vm %d received the CA key", vmID)
		}
	}
}

func TestBundleProofs(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	other := s.Found(2, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	vm1, vm2 := res.ControlPlaneVMIDs[0], res.ControlPlaneVMIDs[1]
	imds1, access1 := s.VMCredentials(vm1)
	imdsOrg2, accessOrg2 := s.VMCredentials(other.ControlPlaneVMIDs[0])
	ctx := context.Background()
	expiredIMDS, err := simulator.IssueIMDSToken(ctx, s.pool, vm1, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	expiredBearer, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", -time.Minute)
	wrongScope, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "api-key", time.Hour)

	cases := []struct {
		name         string
		path         string
		imds, bearer string
		status       int
	}{
		{"valid", itoa(vm1), imds1, access1, 200},
		{"vm_id zero", "0", imds1, access1, 400},
		{"vm_id negative", "-1", imds1, access1, 400},
		{"vm_id huge", "99999999999999999999999", imds1, access1, 400},
		{"vm_id words", "abc", imds1, access1, 400},
		{"vm_id with dots", "1..2", imds1, access1, 400},
		{"no imds token", itoa(vm1), "", access1, 401},
		{"unknown imds token", itoa(vm1), "forged", access1, 401},
		{"expired imds token", itoa(vm1), expiredIMDS, access1, 401},
		{"no bearer", itoa(vm1), imds1, "", 401},
		{"unknown bearer", itoa(vm1), imds1, "forged", 401},
		{"expired bearer", itoa(vm1), imds1, expiredBearer, 401},
		{"wrong scope", itoa(vm1), imds1, wrongScope, 403},
		{"bearer of another org", itoa(vm1), imds1, accessOrg2, 403},
		{"imds of another org", itoa(vm1), imdsOrg2, access1, 403},
		{"a peer's bundle", itoa(vm2), imds1, access1, 403},
		{"another org's vm", itoa(other.ControlPlaneVMIDs[0]), imds1, access1, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{}
			if c.imds != "" {
				h["X-exc-imds-token"] = c.imds
			}
			if c.bearer != "" {
				h["Authorization"] = "Bearer " + c.bearer
			}
			r := stacktest.Do(t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+c.path, "", h)
			if r.Status != c.status {
				t.Fatalf("= %d %s, want %d", r.Status, r.Body, c.status)
			}
			if c.status != 200 {
				r.ErrorCode(t)
				if strings.Contains(string(r.Body), "PRIVATE KEY") {
					t.Fatal("an error carried key material")
				}
			}
		})
	}
}

func TestBundleForVMOutsideAnyCluster(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	var vmID int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO vms (org_id, name, zone_id, subnet_id, image_id, instance_type)
		VALUES (1, 'stray', 1, 1, 1, 'e2.small') RETURNING id`).Scan(&vmID); err != nil {
		t.Fatal(err)
	}
	imds, access := s.VMCredentials(vmID)
	if r := s.FetchBundle(vmID, imds, access); r.Status != http.StatusNotFound {
		t.Fatalf("= %d %s, want 404", r.Status, r.Body)
	}
}

func TestBundleRefusesInactiveCluster(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm := res.ControlPlaneVMIDs[0]
	imds, access := s.VMCredentials(vm)
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET status = 'failed' WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	if r := s.FetchBundle(vm, imds, access); r.Status != http.StatusConflict {
		t.Fatalf("= %d %s, want 409", r.Status, r.Body)
	}
}

// tampering is one way a founded cluster's sealed keys can be spoiled: sql
// touches exactly one row, with $1 the cluster, $2 the VM that then fetches
// (ControlPlaneVMIDs[vm]) and $3 the first VM.
type tampering struct {
	label string
	vm    int
	sql   string
}

// flipByte flips one bit of col in the rows of table matching where.
func flipByte(table, col, where string) string {
	return `UPDATE ` + table + ` SET ` + col + ` = overlay(` + col + ` placing set_byte(substring(` + col +
		` from 20 for 1), 0, get_byte(substring(` + col + ` from 20 for 1), 0) # 1) from 20) WHERE ` + where
}

// identityOf selects node_identities' row of one stored identity of the VM in vm.
func identityOf(name pki.Name, vm string) string {
	return `name = '` + string(name) + `' AND node_id = (SELECT id FROM kube_nodes WHERE vm_id = ` + vm + `)`
}

func tamperings() []tampering {
	// Every statement names all three parameters so Postgres can type them.
	const all = ` AND $1::bigint IS NOT NULL AND $2::bigint IS NOT NULL AND $3::bigint IS NOT NULL`
	var ts []tampering
	for _, col := range []string{"ca_key_sealed", "etcd_ca_key_sealed", "front_proxy_ca_key_sealed",
		"service_account_key_sealed", "wrapped_data_key"} {
		ts = append(ts, tampering{"kube_clusters." + col, 0, flipByte("kube_clusters", col, "id = $1"+all)})
	}
	for _, name := range pki.Names(pki.PhaseFounding) {
		ts = append(ts, tampering{"node_identities." + string(name), 0, flipByte("node_identities", "key_sealed", identityOf(name, "$2")+all)})
	}
	return append(ts,
		// The first node's key on the second node's row: the additional
		// data names the node, so it must not open there.
		tampering{"node key moved", 1, `UPDATE node_identities SET key_sealed = (SELECT key_sealed FROM node_identities
			WHERE ` + identityOf(pki.APIServer, "$3") + `) WHERE ` + identityOf(pki.APIServer, "$2") + all},
		// A stored identity the cert table names but the node lacks (a row
		// deleted, or a stored cert added to the table without a backfill).
		tampering{"identity missing", 0, `DELETE FROM node_identities WHERE ` + identityOf(pki.EtcdPeer, "$2") + all},
	)
}

// TestTamperedSealedKeyFailsClosed spoils every sealed value in turn: the
// fetch is a 500 that says nothing, and the log names the cluster and VM but
// holds no key.
func TestTamperedSealedKeyFailsClosed(t *testing.T) {
	for _, c := range tamperings() {
		t.Run(c.label, func(t *testing.T) {
			s := newStack(t)
			res := s.Found(1, stacktest.ThreeNodes)
			vm := res.ControlPlaneVMIDs[c.vm]
			imds, access := s.VMCredentials(vm)
			tag, err := s.pool.Exec(context.Background(), c.sql, res.ClusterID, vm, res.ControlPlaneVMIDs[0])
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("tampering: %v (%d rows)", err, tag.RowsAffected())
			}
			assertFailsClosed(t, s, res.ClusterID, vm, s.FetchBundle(vm, imds, access))
		})
	}
}

// assertFailsClosed: a bare 500 internal, logged with cluster and VM, no key
// in the log.
func assertFailsClosed(t *testing.T, s *stack, clusterID, vm int64, r stacktest.Response) {
	t.Helper()
	if r.Status != http.StatusInternalServerError || r.ErrorCode(t) != "internal" {
		t.Fatalf("= %d %s, want 500 internal", r.Status, r.Body)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, `"msg":"sealed key material does not open","cluster_id":`+itoa(clusterID)+`,"vm_id":`+itoa(vm)) {
		t.Errorf("the failure is not reported with its cluster and VM:\n%s", logs)
	}
	if strings.Contains(logs, "-----BEGIN") || strings.Contains(logs, "PRIVATE KEY") {
		t.Errorf("the log holds key material")
	}
}

func TestBundleResponseIsJSONWithMetadata(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	imds, access := s.VMCredentials(res.ControlPlaneVMIDs[0])
	r := s.FetchBundle(res.ControlPlaneVMIDs[0], imds, access)
	var m map[string]json.RawMessage
	r.JSON(t, &m)
	for _, k := range []string{"cluster_id", "vm_id", "node_name", "service_ip", "dns_service_ip", "apiserver_endpoint",
		"etcd_initial_cluster", "suggested_dns_records", "is_initial_control_plane", "files", "file_modes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("bundle lacks %q", k)
		}
	}
}
