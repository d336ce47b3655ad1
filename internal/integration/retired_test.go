package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// A node bootstrapped before kube-proxy's identity was retired holds one,
// and its renewal script names it (its cluster's DaemonSet reads it from
// the host): k8sapi renews it as before. A node that names none is not
// asked for it. The node's next window issues none, and its first fetch
// marks the row so the cluster's expiry no longer counts a certificate
// nothing renews.
func TestRetiredIdentityOfAnOlderNode(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	if _, ok := b.Files[bundle.KeyPath(pki.KubeProxy)]; ok {
		t.Fatal("a new bundle holds kube-proxy's key")
	}
	// As a node bootstrapped before held it: a kube-proxy row of its
	// window, here over the scheduler's key.
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO node_identities
		(node_id, name, cert, key_sealed, not_after, window_opened_at, bootstrap_only)
		SELECT i.node_id, $1, i.cert, i.key_sealed, i.not_after, i.window_opened_at, i.bootstrap_only
		FROM node_identities i JOIN kube_nodes n ON n.id = i.node_id WHERE n.vm_id = $2 AND i.name = $3`,
		string(pki.KubeProxy), vm.id, string(pki.Scheduler)); err != nil {
		t.Fatal(err)
	}
	csrs := map[pki.Name]string{}
	for _, name := range append(pki.Renewable(), pki.KubeProxy) {
		key := name
		if name == pki.KubeProxy {
			key = pki.Scheduler
		}
		csrs[name] = stacktest.SignedCSR(t, b.Files[bundle.KeyPath(key)])
	}
	clk.Set(41 * time.Minute) // due
	body, _ := json.Marshal(map[string]any{"csrs": csrs})
	r := s.Renew(vm.id, vm.imds, vm.access, string(body))
	var got renewalBody
	r.JSON(t, &got)
	if r.Status != http.StatusOK || !slices.Contains(got.Renewed, string(pki.KubeProxy)) {
		t.Fatalf("an older node's renewal: %d %s", r.Status, r.Body)
	}
	cert, err := pki.ParseCert([]byte(got.Certificates[string(pki.KubeProxy)]))
	if err != nil || cert.Subject.CommonName != "system:kube-proxy" || !slices.Equal(cert.Subject.Organization, []string{"system:node-proxier"}) {
		t.Fatalf("the renewed kube-proxy certificate: %v %+v", err, cert)
	}
	verifyChain(t, b.Files["/etc/exk8s/pki/ca.pem"], got.Certificates[string(pki.KubeProxy)])

	// Renewed again without it, as a newer node asks: it is not required.
	if got := s.mustRenew(t, vm, b); slices.Contains(got.Renewed, string(pki.KubeProxy)) || got.Certificates[string(pki.KubeProxy)] != "" {
		t.Errorf("a renewal that names no kube-proxy identity was answered one: %v", got.Renewed)
	}

	s.reopen(clusterID, vm.id)
	s.fetch(vm, http.StatusOK, "")
	var counted bool
	if err := s.pool.QueryRow(context.Background(), `SELECT NOT i.bootstrap_only FROM node_identities i
		JOIN kube_nodes n ON n.id = i.node_id WHERE n.vm_id = $1 AND i.name = $2`, vm.id, string(pki.KubeProxy)).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted {
		t.Error("the re-opened node's window left its retired kube-proxy certificate counted in the expiry")
	}
}
