package e2e

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// TestEtcdInNamespace checks the harness itself: one etcd member with a
// throwaway CA, started in a node namespace, reached over mutual TLS from
// the switch namespace. It fails fast when the network plumbing or the
// etcd build is broken, before the long proof runs.
func TestEtcdInNamespace(t *testing.T) {
	requireRoot(t)
	r := newRun(t, "smoke")
	addr := netip.MustParsePrefix("10.0.1.2/24")
	net, err := harness.NewNetwork(r.ID, []netip.Prefix{addr})
	if err != nil {
		fatal(t, err)
	}
	r.SetNetwork(net)
	node := net.Nodes[0]
	root := filepath.Join(r.WorkDir, "n1")
	pki := filepath.Join(root, "pki")
	ca, err := harness.NewTestCA("smoke-etcd-ca")
	if err != nil {
		fatal(t, err)
	}
	if err := ca.WriteCert(pki, "ca"); err != nil {
		fatal(t, err)
	}
	if err := ca.Issue(pki, "member", "n1", node.IP(), "127.0.0.1"); err != nil {
		fatal(t, err)
	}
	if err := ca.Issue(pki, "client", "smoke-client"); err != nil {
		fatal(t, err)
	}
	ip := node.IP()
	argv := []string{bin("etcd"),
		"--name=n1",
		"--data-dir=" + filepath.Join(root, "data"),
		"--listen-client-urls=https://" + ip + ":2379,https://127.0.0.1:2379",
		"--advertise-client-urls=https://" + ip + ":2379",
		"--listen-peer-urls=https://" + ip + ":2380",
		"--initial-advertise-peer-urls=https://" + ip + ":2380",
		"--initial-cluster=n1=https://" + ip + ":2380",
		"--initial-cluster-state=new",
		"--client-cert-auth", "--peer-client-cert-auth",
		"--trusted-ca-file=" + filepath.Join(pki, "ca.pem"),
		"--cert-file=" + filepath.Join(pki, "member.pem"),
		"--key-file=" + filepath.Join(pki, "member-key.pem"),
		"--peer-trusted-ca-file=" + filepath.Join(pki, "ca.pem"),
		"--peer-cert-file=" + filepath.Join(pki, "member.pem"),
		"--peer-key-file=" + filepath.Join(pki, "member-key.pem"),
	}
	if _, err := r.Start("n1/etcd", harness.Host{NS: node.NS, Hostname: "n1"}, root, nil, argv); err != nil {
		fatal(t, err)
	}
	r.Suspect("n1/etcd")
	tlsCfg, err := harness.MutualTLS(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "client.pem"), filepath.Join(pki, "client-key.pem"))
	if err != nil {
		fatal(t, err)
	}
	cli, err := harness.EtcdClient([]string{"https://" + ip + ":2379"}, tlsCfg, harness.Dialer(net.Switch))
	if err != nil {
		fatal(t, err)
	}
	defer cli.Close()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if err := r.Dead(); err != nil {
			fatal(t, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		summary, err := harness.EtcdHealth(ctx, cli, 1)
		cancel()
		if err == nil {
			t.Log(summary)
			break
		}
		last = err
		time.Sleep(500 * time.Millisecond)
	}
	if time.Now().After(deadline) {
		fatalf(t, "etcd not healthy in 60s: %v", last)
	}
	// Without a client certificate the member must refuse (mutual TLS).
	noCert := tlsCfg.Clone()
	noCert.Certificates = nil
	anon, err := harness.EtcdClient([]string{"https://" + ip + ":2379"}, noCert, harness.Dialer(net.Switch))
	if err != nil {
		fatal(t, err)
	}
	defer anon.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := anon.Get(ctx, "x"); err == nil {
		fatal(t, "etcd answered a client without a certificate")
	} else if !strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "deadline") {
		t.Logf("anonymous client refused: %v", err)
	}
}
