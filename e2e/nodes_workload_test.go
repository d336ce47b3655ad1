package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// probeManifest is the test workload: one probe pod on every node and a
// Service in front of them.
func probeManifest() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: probe
  namespace: default
spec:
  selector:
    matchLabels: {app: probe}
  template:
    metadata:
      labels: {app: probe}
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - name: probe
        image: %s/e2e/probe:1
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: probe
  namespace: default
spec:
  selector: {app: probe}
  ports: [{port: 8080, targetPort: 8080}]
`, svcAddr(registryPort))
}

// probePod is one probe pod: its name, node and address.
type probePod struct{ name, node, ip string }

// checkWorkloads waits for the reachability watch (watchReachability,
// started when the machines booted): from the probe on the initial node,
// pod-to-pod across nodes, the kubernetes Service's VIP, Service names
// through CoreDNS, kubectl logs and exec (every check is an exec). If the
// watch gave up, each check is asked on its own, so the failure names
// the one that does not hold. Then a pod cannot reach IMDS while its node
// can. It returns what held, for the summary line.
func (c *machineCluster) checkWorkloads(t *testing.T, svc services, tl *timeline) []string {
	t.Helper()
	at, err := c.reach.result()
	if err != nil {
		t.Logf("the workloads were not reachable within the watch (%v); asking each check on its own", err)
		c.checkEachReach(t)
		at = time.Now()
	}
	tl.markAt("workloads reachable", at)
	c.checkIMDSGuard(t, c.probePods(t)[0], svc)
	return []string{"static pods, flannel, kube-proxy and CoreDNS ready", "pod-to-pod across nodes, Service VIP and DNS",
		"kubectl logs and exec", "pods cannot reach IMDS, nodes can"}
}

// checkEachReach asks every reachability check on its own until it holds.
func (c *machineCluster) checkEachReach(t *testing.T) {
	t.Helper()
	eventually(t, c.r, "the probe on every node", nil, 3*time.Minute, func(ctx context.Context) (string, error) {
		pods, err := c.readyProbePods(ctx)
		return fmt.Sprint(len(pods), " probe pods Ready"), err
	})
	pods := c.probePods(t)
	for _, ch := range reachChecks(pods[0], pods[1:], c.kubernetesServiceIP(t)) {
		eventually(t, c.r, ch.what, nil, 2*time.Minute, func(ctx context.Context) (string, error) {
			return "holds", c.run(ctx, ch)
		})
	}
}

// applyProbeEarly applies the probe workload from the moment the machines
// boot, retrying until the initial node's API server takes it, while the
// rest of the cluster comes up: as a user's pipeline that applies its
// workloads as soon as the API answers would. The probe's pods then start
// as soon as their nodes are Ready, not after every check of the bring-up;
// checkWorkloads applies it again (no change) and waits for it.
func (c *machineCluster) applyProbeEarly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.reach = c.watchReachability(ctx, 10*time.Minute)
	t.Cleanup(func() { cancel(); <-done; <-c.reach.done })
	go func() {
		defer close(done)
		for !c.applyProbeWithin(ctx, 10*time.Second) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// applyProbeWithin is one bounded attempt of applyProbe.
func (c *machineCluster) applyProbeWithin(ctx context.Context, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return c.applyProbe(ctx) == nil
}

// applyProbe writes the probe's manifest on the initial node and applies it.
func (c *machineCluster) applyProbe(ctx context.Context) error {
	if err := c.writeInMachine(0, "/root/probe.yaml", []byte(probeManifest())); err != nil {
		return err
	}
	if out, err := c.kubectl(ctx, "apply", "-f", "/root/probe.yaml"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// probePods lists the probe pods, one per node, the initial node's first.
func (c *machineCluster) probePods(t *testing.T) []probePod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := c.readyProbePods(ctx)
	if err != nil {
		fatal(t, err)
	}
	return pods
}

// readyProbePods lists the probe pods, one Ready on each node, the
// initial node's first.
func (c *machineCluster) readyProbePods(ctx context.Context) ([]probePod, error) {
	var l kubeList
	if err := c.kubectlJSON(ctx, &l, "get", "pods", "-l", "app=probe"); err != nil {
		return nil, err
	}
	var pods []probePod
	nodes := map[string]bool{}
	for i, p := range l.Items {
		if condition(i, l, "Ready") != "True" {
			continue
		}
		pp := probePod{p.Metadata.Name, p.Spec.NodeName, p.Status.PodIP}
		nodes[pp.node] = true
		if c.isInitialNode(ctx, pp.node) {
			pods = append([]probePod{pp}, pods...)
		} else {
			pods = append(pods, pp)
		}
	}
	if len(nodes) != len(c.machines) || len(pods) != len(c.machines) {
		return nil, fmt.Errorf("ready probe pods %+v: want one on each of %d nodes", pods, len(c.machines))
	}
	return pods, nil
}

// isInitialNode says whether a Node is the initial machine's (its address).
func (c *machineCluster) isInitialNode(ctx context.Context, node string) bool {
	out, err := c.kubectl(ctx, "get", "node", node, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	return err == nil && strings.TrimSpace(string(out)) == c.vms[0].addr.Addr().String()
}

func (c *machineCluster) kubernetesServiceIP(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.kubectl(ctx, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		fatal(t, err)
	}
	return strings.TrimSpace(string(out))
}

// execExpect runs argv in the pod (kubectl exec) until its output holds
// want.
func (c *machineCluster) execExpect(t *testing.T, p probePod, what, want string, argv ...string) {
	t.Helper()
	eventually(t, c.r, what, nil, 2*time.Minute, func(ctx context.Context) (string, error) {
		out, err := c.kubectl(ctx, append([]string{"exec", p.name, "--"}, argv...)...)
		if err != nil || !strings.Contains(string(out), want) {
			return "", fmt.Errorf("want %q, got %q (%v)", want, out, err)
		}
		return strings.TrimSpace(string(out)), nil
	})
}

// checkIMDSGuard: the node reaches IMDS, a pod on it cannot (the guard's
// nftables drop): a pod must never get the VM's credentials.
func (c *machineCluster) checkIMDSGuard(t *testing.T, p probePod, svc services) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imds := fmt.Sprintf("%s/imds/%d/", svc.simURL, c.vms[0].id)
	code, err := c.initial().Exec(ctx, "curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", imds)
	if err != nil || strings.TrimSpace(string(code)) == "000" {
		errorf(t, "the initial node cannot reach IMDS at %s: %q (%v)", imds, code, err)
	}
	if code, err := c.podHTTPStatus(ctx, p, imds); err != nil || code != "000" {
		errorf(t, "pod %s reached IMDS at %s: HTTP %s (%v)", p.name, imds, code, err)
	}
}

// curlStatus is curl's -w word in the exec's output, which also holds
// kubectl's own complaint ("command terminated with exit code 28").
var curlStatus = regexp.MustCompile(`status=(\d{3})`)

// podHTTPStatus asks url from pod p with curl and answers the HTTP status
// curl printed, "000" when it got no answer. kubectl exec exits 0 with no
// output when its stream breaks (kubernetes/kubectl#1726), so a negative
// check cannot read the exit code: it needs curl's own word, asked again
// until one exec delivers it.
func (c *machineCluster) podHTTPStatus(ctx context.Context, p probePod, url string) (string, error) {
	for {
		out, err := c.kubectl(ctx, "exec", p.name, "--", "curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "status=%{http_code}", url)
		if m := curlStatus.FindSubmatch(out); m != nil {
			return string(m[1]), nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("no answer from curl in %s: %q (%v)", p.name, out, err)
		}
		sleepCtx(ctx, time.Second)
	}
}

// checkReboot reboots machine i and, until it is back, writes through the
// initial node every second: each write needs an etcd quorum, so none may
// fail. Then the node is Ready again and every etcd member healthy.
func (c *machineCluster) checkReboot(t *testing.T, i int, tl *timeline) time.Duration {
	t.Helper()
	m := c.machines[i]
	before, err := m.Leader()
	if err != nil {
		fatal(t, err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, _ = m.Exec(ctx, "systemctl", "reboot")
	cancel()
	writes := 0
	eventually(t, c.r, fmt.Sprintf("%s rebooted and Ready again, every write meanwhile accepted", m.Name), c.consoles(), 5*time.Minute, func(ctx context.Context) (string, error) {
		writes++
		if out, err := c.kubectl(ctx, "create", "configmap", fmt.Sprintf("quorum-%d", writes)); err != nil {
			fatalf(t, "write %d during the reboot of %s failed (etcd quorum lost?): %v %s", writes, m.Name, err, out)
		}
		return c.rebootedAndReady(ctx, i, before, start)
	})
	took := time.Since(start)
	tl.mark(fmt.Sprintf("node %d rebooted and Ready (%.0f s)", i+1, took.Seconds()))
	eventually(t, c.r, "every etcd member healthy", nil, 2*time.Minute, c.etcdHealthy)
	return took
}

// rebootedAndReady: machine i runs a new PID 1 (it did reboot) and its
// Node is Ready as its kubelet reported after the reboot (a Ready from
// before it stays on the Node until the node controller notices).
func (c *machineCluster) rebootedAndReady(ctx context.Context, i int, before int, since time.Time) (string, error) {
	leader, err := c.machines[i].Leader()
	if err != nil || leader == before {
		return "", fmt.Errorf("not rebooted yet (PID 1 %d, %v)", leader, err)
	}
	return c.readySince(ctx, i, since)
}

// readySince: the Node at machine i's address is Ready, as its kubelet
// reported at since or later.
func (c *machineCluster) readySince(ctx context.Context, i int, since time.Time) (string, error) {
	var nodes kubeList
	if err := c.kubectlJSON(ctx, &nodes, "get", "nodes"); err != nil {
		return "", err
	}
	for j, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			status, confirmed := conditionSince(j, nodes, "Ready")
			if a.Address == c.vms[i].addr.Addr().String() && status == "True" && !confirmed.Before(since.Truncate(time.Second)) {
				return n.Metadata.Name + " Ready, reported at " + confirmed.Format(time.TimeOnly), nil
			}
		}
	}
	return "", fmt.Errorf("node at %s not Ready yet", c.vms[i].addr.Addr())
}

// etcdHealthy asks every member over mutual TLS, from the initial node.
func (c *machineCluster) etcdHealthy(ctx context.Context) (string, error) {
	out, err := c.etcdctl(ctx, c.etcdEndpoints(), "endpoint", "health")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d members healthy", strings.Count(string(out), "is healthy")), nil
}

// etcdEndpoints is every member's client URL.
func (c *machineCluster) etcdEndpoints() string {
	var endpoints []string
	for _, v := range c.vms {
		endpoints = append(endpoints, "https://"+v.addr.Addr().String()+":2379")
	}
	return strings.Join(endpoints, ",")
}

// etcdctl runs etcdctl on the initial node against endpoints, as the API
// server's etcd client.
func (c *machineCluster) etcdctl(ctx context.Context, endpoints string, args ...string) ([]byte, error) {
	return c.initial().Exec(ctx, append([]string{"etcdctl", "--endpoints=" + endpoints,
		"--cacert=/etc/exk8s/pki/etcd-ca.pem", "--cert=/etc/exk8s/pki/apiserver-etcd-client.pem",
		"--key=/etc/exk8s/pki/apiserver-etcd-client-key.pem"}, args...)...)
}

// lastLine is the last non-empty line of a command's output.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// curl's word is found in what kubectl exec hands back: alone, followed
// by kubectl's complaint of curl's exit code, and not in a broken
// stream's empty output.
func TestCurlStatusReadsCurlsWordAmongKubectlsComplaint(t *testing.T) {
	for out, want := range map[string]string{"status=200": "200",
		"status=000command terminated with exit code 28\n": "000", "": ""} {
		got := ""
		if m := curlStatus.FindStringSubmatch(out); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("status in %q: %q, want %q", out, got, want)
		}
	}
}
