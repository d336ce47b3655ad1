package e2e

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// Short leaves for the node proof: every certificate is due for renewal a
// minute after it is issued, so the proof renews them on real nodes; an
// hour keeps the cluster (and the admin identity the proof's kubectl and
// the conformance subset use) valid for the whole run.
var shortLeavesEnv = []string{"LEAF_CERT_LIFETIME=60m", "CERT_RENEW_BEFORE=59m"}

// checkRenewal runs each node's renewal unit, one node after the other (a
// restarted etcd member rejoins before the next restarts): every
// certificate the node renews changes, no key file changes (the node
// proved it holds its keys; none came from k8sapi), each new certificate
// is over the node's own key, and the cluster stays healthy.
func (c *machineCluster) checkRenewal(t *testing.T, tl *timeline) string {
	t.Helper()
	for i, m := range c.machines {
		before := c.pkiDigests(t, m)
		ctx, cancel := context.WithTimeout(context.Background(), 16*time.Minute) // the unit's own limit is 15
		start := time.Now()
		stopWatch := c.watchSlowRenewal(t, m)
		out, err := m.Exec(ctx, "systemctl", "start", "exk8s-renew-certificates.service")
		stopWatch()
		t.Logf("%s: renewal unit finished in %s", m.Name, time.Since(start).Round(time.Millisecond))
		if err != nil {
			fatalf(t, "%s: the renewal failed: %v %s\n%s", m.Name, err, out, c.journalTail(ctx, m, "exk8s-renew-certificates", 30))
		}
		cancel()
		c.checkRenewedFiles(t, m, before, c.pkiDigests(t, m))
		c.checkServedCerts(t, m, c.vms[i].addr.Addr().String())
		eventually(t, c.r, fmt.Sprintf("every etcd member healthy after %s renewed", m.Name), nil, 2*time.Minute, c.etcdHealthy)
		eventually(t, c.r, fmt.Sprintf("every node Ready after %s renewed", m.Name), c.consoles(), 3*time.Minute, c.allNodesReady)
		tl.mark(fmt.Sprintf("node %d renewed its certificates", i+1))
	}
	return fmt.Sprintf("certificates renewed on %d/%d nodes", len(c.machines), len(c.machines))
}

// slowRenewal is how long a renewal may run before the proof logs what
// the unit's processes are doing: a renewal takes about 20 s, and once
// the manager has started killing what is left of it (or its timeout
// fires) the evidence is gone.
const slowRenewal = 45 * time.Second

// watchSlowRenewal logs the renewal unit's state and the node's processes
// if the renewal on m outlasts slowRenewal; the returned func stops it.
func (c *machineCluster) watchSlowRenewal(t *testing.T, m *harness.Machine) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-time.After(slowRenewal):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		status, _ := m.Exec(ctx, "systemctl", "status", "--no-pager", "-l", "exk8s-renew-certificates.service")
		ps, _ := m.Exec(ctx, "ps", "-eo", "pid,ppid,stat,wchan:24,cgroup:60,args")
		t.Logf("%s: the renewal still runs after %s:\n%s\n%s", m.Name, slowRenewal, status, ps)
	}()
	return func() { close(done) }
}

// renewedOnEveryNode are certificates every node renews: one of each kind
// (stored serving, client, kubeconfig-embedded, kubelet serving).
var renewedOnEveryNode = []string{"etcd-peer", "apiserver", "apiserver-etcd-client", "kubelet-client", "kubelet"}

func (c *machineCluster) checkRenewedFiles(t *testing.T, m *harness.Machine, before, after map[string]string) {
	t.Helper()
	for file, sum := range before {
		if strings.HasSuffix(file, "-key.pem") && after[file] != sum {
			errorf(t, "%s: %s changed in a renewal: keys never travel", m.Name, file)
		}
	}
	for _, name := range renewedOnEveryNode {
		cert := "/etc/exk8s/pki/" + name + ".pem"
		if after[cert] == before[cert] {
			errorf(t, "%s: %s did not change in a renewal", m.Name, cert)
		}
		c.checkCertOverKey(t, m, cert, "/etc/exk8s/pki/"+name+"-key.pem")
	}
	if after["/etc/exk8s/kubeconfig/kubelet.kubeconfig"] == before["/etc/exk8s/kubeconfig/kubelet.kubeconfig"] {
		errorf(t, "%s: the kubelet's kubeconfig kept its old certificate", m.Name)
	}
}

// servingCerts is which certificate file each serving port of a node
// presents: after a renewal, each restarted component serves the new one.
var servingCerts = []struct {
	port int
	cert string
}{
	{2379, "/etc/exk8s/pki/etcd-peer.pem"},
	{6443, "/etc/exk8s/pki/apiserver.pem"},
	{10250, "/etc/exk8s/pki/kubelet.pem"},
}

// checkServedCerts: etcd, the API server and the kubelet on m serve, on
// the node's address ip (the kubelet listens there only), the certificates
// the renewal wrote (they were restarted onto them).
func (c *machineCluster) checkServedCerts(t *testing.T, m *harness.Machine, ip string) {
	t.Helper()
	for _, sc := range servingCerts {
		script := fmt.Sprintf(`served="$(openssl s_client -connect %s:%d </dev/null 2>/dev/null | openssl x509 -noout -serial)"
			file="$(openssl x509 -noout -serial -in %s)"
			[ -n "$served" ] && [ "$served" = "$file" ] && echo "$served" || { echo "serves $served, file $file"; exit 1; }`, ip, sc.port, sc.cert)
		eventually(t, c.r, fmt.Sprintf("%s serves the renewed %s on port %d", m.Name, sc.cert, sc.port), nil, 2*time.Minute,
			func(ctx context.Context) (string, error) {
				out, err := m.Exec(ctx, "sh", "-c", script)
				if err != nil {
					return "", fmt.Errorf("%v: %s", err, out)
				}
				return strings.TrimSpace(string(out)), nil
			})
	}
}

// pkiDigests is the SHA-256 of every PEM file and kubeconfig on m.
func (c *machineCluster) pkiDigests(t *testing.T, m *harness.Machine) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := m.Exec(ctx, "sh", "-c", "sha256sum /etc/exk8s/pki/*.pem /etc/exk8s/kubeconfig/*.kubeconfig")
	if err != nil {
		fatalf(t, "%s: %v %s", m.Name, err, out)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			sums[f[1]] = f[0]
		}
	}
	return sums
}

// checkCertOverKey: the certificate's public key is the key file's.
func (c *machineCluster) checkCertOverKey(t *testing.T, m *harness.Machine, cert, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := m.Exec(ctx, "sh", "-c", fmt.Sprintf(
		`[ "$(openssl x509 -noout -pubkey -in %s)" = "$(openssl pkey -pubout -in %s)" ] && echo same`, cert, key))
	if err != nil || strings.TrimSpace(string(out)) != "same" {
		errorf(t, "%s: %s is not over %s: %v %s", m.Name, cert, key, err, out)
	}
}

// allNodesReady: every Node reports Ready.
func (c *machineCluster) allNodesReady(ctx context.Context) (string, error) {
	out, err := c.kubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	if ready := strings.Count(string(out), "True"); ready != len(c.machines) {
		return "", fmt.Errorf("%d of %d Ready", ready, len(c.machines))
	}
	return "all Ready", nil
}

// imdsRelayManifest is a Service without a selector whose endpoint is
// host:port: kube-proxy translates its ClusterIP to host:port after the
// guard's prerouting rule has seen the packet.
func imdsRelayManifest(name, host, port string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  ports: [{port: 80, targetPort: %[3]s, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{port: %[3]s, protocol: TCP}]
endpoints: [{addresses: [%[2]q]}]
`, name, host, port)
}

var translatedDrops = regexp.MustCompile(`counter packets ([0-9]+)`)

// checkIMDSThroughService: a Service whose endpoint is IMDS does not carry
// a pod there. The control: the same kind of Service to a peer probe pod
// answers, so the Service itself works; and the guard's translated chain
// on the pod's node counted the drops, so the guard is what stopped it.
func (c *machineCluster) checkIMDSThroughService(t *testing.T, from, peer probePod, svc services) string {
	t.Helper()
	sim, err := url.Parse(svc.simURL)
	if err != nil {
		fatal(t, err)
	}
	manifest := imdsRelayManifest("imds-relay", sim.Hostname(), sim.Port()) + "---\n" +
		imdsRelayManifest("peer-relay", peer.ip, "8080")
	if err := c.writeInMachine(0, "/root/relays.yaml", []byte(manifest)); err != nil {
		fatal(t, err)
	}
	eventually(t, c.r, "the relay Services applied", nil, time.Minute, func(ctx context.Context) (string, error) {
		out, err := c.kubectl(ctx, "apply", "-f", "/root/relays.yaml")
		return lastLine(out), err
	})
	c.execExpect(t, from, "a selector-less Service to a peer pod answers", "probe "+peer.name,
		"curl", "-s", "--max-time", "5", "http://peer-relay/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imds := fmt.Sprintf("http://imds-relay/imds/%d/", c.vms[0].id)
	if code, err := c.podHTTPStatus(ctx, from, imds); err != nil || code != "000" {
		errorf(t, "pod %s reached IMDS through a Service at %s: HTTP %s (%v)", from.name, imds, code, err)
	}
	out, err := c.initial().Exec(ctx, "nft", "list", "chain", "inet", "exk8s_imds_guard", "pods_to_imds_translated")
	if m := translatedDrops.FindSubmatch(out); err != nil || m == nil || string(m[1]) == "0" {
		errorf(t, "the guard's translated chain dropped nothing: %v %s", err, out)
	}
	return "IMDS unreachable through a Service"
}
