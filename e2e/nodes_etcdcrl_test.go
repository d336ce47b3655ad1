package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The replaced node's etcd identity is refused by CRL (issue 43, item 2):
// its API server's etcd client certificate, copied from its disk before
// the machine stops, answers a member that stays before the replacement,
// and once k8sapi has retired the node every member refuses its TLS
// handshake, each still answering the initial node's own client, within
// two minutes (the members' exk8s-etcd-crl.timer installs the CRL k8sapi
// signed at the retirement; etcd reads it per handshake, no restart).

// retiredClientDir is where the initial node keeps the copy, beside no
// file of the bundle's.
const retiredClientDir = "/var/lib/exk8s-e2e"

// etcdClient is an etcd client identity on the initial node.
type etcdClient struct{ cert, key string }

// keepEtcdClient copies machine i's etcd client identity onto the initial
// node, for etcdctl there.
func (c *machineCluster) keepEtcdClient(t *testing.T, i int) etcdClient {
	t.Helper()
	dir := filepath.Join(c.initial().Root, retiredClientDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fatal(t, err)
	}
	id := etcdClient{cert: retiredClientDir + "/retired-etcd-client.pem", key: retiredClientDir + "/retired-etcd-client-key.pem"}
	for from, to := range map[string]string{"apiserver-etcd-client.pem": id.cert, "apiserver-etcd-client-key.pem": id.key} {
		b, err := os.ReadFile(filepath.Join(c.machines[i].Root, "etc/exk8s/pki", from))
		if err != nil || len(b) == 0 {
			fatalf(t, "reading %s's %s: %v", c.machines[i].Name, from, err)
		}
		if err := os.WriteFile(filepath.Join(c.initial().Root, to), b, 0o600); err != nil {
			fatal(t, err)
		}
	}
	return id
}

// etcdHealthAs is etcdctl endpoint health against endpoint as id, briefly:
// a refused identity's call lasts its whole --command-timeout, so each call
// has its own time, not the share left of the caller's attempt (two refused
// members used up a 10 s attempt before the third was asked).
func (c *machineCluster) etcdHealthAs(ctx context.Context, id etcdClient, endpoint string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return c.initial().Exec(ctx, "etcdctl", "--endpoints="+endpoint, "--cacert=/etc/exk8s/pki/etcd-ca.pem",
		"--cert="+id.cert, "--key="+id.key, "--dial-timeout=2s", "--command-timeout=3s", "endpoint", "health")
}

// checkEtcdClientAnswered: before the replacement, the member at index
// stays answers id (so a refusal later is the retirement's doing).
func (c *machineCluster) checkEtcdClientAnswered(t *testing.T, id etcdClient, stays int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint := "https://" + c.vms[stays].addr.Addr().String() + ":2379"
	if out, err := c.etcdHealthAs(ctx, id, endpoint); err != nil {
		fatalf(t, "the node to be replaced's etcd client is refused by %s before its retirement: %v\n%s", endpoint, err, out)
	}
}

// etcdClientRefused: every member refuses id's handshake and still
// answers the initial node's own client.
func (c *machineCluster) etcdClientRefused(ctx context.Context, id etcdClient) (string, error) {
	for _, v := range c.vms {
		endpoint := "https://" + v.addr.Addr().String() + ":2379"
		own, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		out, err := c.etcdctl(own, endpoint, "--dial-timeout=3s", "--command-timeout=5s", "endpoint", "health")
		cancel()
		if err != nil {
			return "", fmt.Errorf("%s does not answer the initial node's client either: %v %s", endpoint, err, out)
		}
		if out, err := c.etcdHealthAs(ctx, id, endpoint); err == nil {
			return "", fmt.Errorf("%s still answers the retired node's client certificate: %s", endpoint, lastLine(out))
		}
	}
	return fmt.Sprintf("%d members refuse it", len(c.vms)), nil
}

// checkRetiredEtcdClientRefused waits, from retiredAt, until every member
// refuses id: at most two minutes and the poll's slack.
func (c *machineCluster) checkRetiredEtcdClientRefused(t *testing.T, id etcdClient, retiredAt time.Time) string {
	t.Helper()
	eventually(t, c.r, "the retired node's etcd client certificate refused by every member (CRL)", c.consoles(), 150*time.Second,
		func(ctx context.Context) (string, error) { return c.etcdClientRefused(ctx, id) })
	return fmt.Sprintf("its etcd client certificate refused by all %d members %.0f s after its retirement (CRL)",
		len(c.vms), time.Since(retiredAt).Seconds())
}
