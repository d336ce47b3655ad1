package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The versions the node proof founds its cluster with: what
// build-components.sh builds and the mirror and registry serve.
var nodeVersions = harness.MirrorVersions{
	Kubernetes: "v1.35.4", Etcd: "v3.6.16", Containerd: "v2.2.9", Runc: "v1.3.6", CNIPlugins: "v1.9.1",
	Arch: runtime.GOARCH, UpgradeTo: upgradeRelease.Kubernetes,
}

// upgradeRelease is the release the proof's upgrade moves its cluster to
// (the product's release table's next one): build-components.sh builds
// its Kubernetes and CoreDNS into folders named by their versions.
var upgradeRelease = harness.ImageRelease{Kubernetes: "v1.36.3", CoreDNS: "v1.14.2", Pause: "3.10.2",
	KubeDir: "v1.36.3", CoreDNSDir: "v1.14.2"}

// proofCNI is the cni the node proof founds its clusters with.
const proofCNI = "flannel"

const (
	corednsVersion = "v1.13.1"
	pauseVersion   = "3.10.1"
	// flannelVersion is what e2e/components/flannel builds and the
	// product's artifacts name (artifacts.Default's flannel_version).
	flannelVersion = "v0.28.10"
	// Ports on harness.ServicesAddr; the API's and IMDS's follow the stack's.
	mirrorPort   = 80
	registryPort = 5000
	dnsPort      = 53
	// objectStorePort relays to the stack's moto (its S3: the etcd
	// snapshots' bucket), whose own port is chosen when the stack starts,
	// after the stack was told where the nodes reach it.
	objectStorePort = 9000
)

// services is what the node network reaches at harness.ServicesAddr.
type services struct {
	mirrorDir     string
	resolverHosts string // the resolver's hosts file: the platform's DNS records
	apiURL        string // the local gateway, as the nodes see it
	simURL        string // the platform simulator (IMDS), as the nodes see it
}

func svcAddr(port int) string { return fmt.Sprintf("%s:%d", harness.ServicesAddr, port) }

// objectStoreEnv tells the stack where the nodes reach its object store:
// the URLs it presigns for them name that address.
func objectStoreEnv() []string {
	return []string{"ETCD_SNAPSHOT_NODE_ENDPOINT=http://" + svcAddr(objectStorePort)}
}

// mirrorEnv is the configuration the stack founds clusters with: every
// download from the mirror, every image from the registry, the mirror's
// own pins, and no published-digest fallback.
func mirrorEnv(mirrorDir string) []string {
	env := []string{
		"ETCD_VERSION=" + nodeVersions.Etcd,
		"IMAGE_REGISTRY=" + svcAddr(registryPort),
		"IMAGE_REGISTRY_PLAIN_HTTP=true",
		"ARTIFACT_MANIFEST_FILE=" + filepath.Join(mirrorDir, "artifacts.sha256"),
		"ARTIFACT_DIGEST_FALLBACK=false",
	}
	for k, v := range harness.MirrorBases("http://" + svcAddr(mirrorPort)) {
		env = append(env, k+"="+v)
	}
	return env
}

// TestNodesBecomeACluster is the node proof: a cluster founded through
// the API with the flannel CNI, each VM booted as a systemd machine that
// runs the userdata it was given, every download from a mirror and every
// image from a registry on the node network, and the result a working
// three-node cluster that passes the conformance subset, whose etcd is
// snapshotted, loses a node that is replaced through the API, and is
// restored into a new cluster; last, a worker pool joins it, runs a
// workload, and is scaled down and deleted, its workers drained.
func TestNodesBecomeACluster(t *testing.T) {
	p := bringUpCluster(t, "nodes", shortLeavesEnv)
	c, tl := p.c, p.tl
	c.checkUnits(t)
	c.checkAddonsOnInitialOnly(t)
	c.checkNodesReady(t, p.vms, tl)
	c.checkMirrorPods(t)
	tl.mark("every static pod Running")
	c.checkAddonsReady(t)
	tl.mark("flannel, kube-proxy and CoreDNS ready")
	held := c.checkWorkloads(t, p.svc, tl)
	if bringUpOnly() {
		tl.finish(t)
		t.Logf("e2e (bring-up only): %d/%d nodes Ready; nodes Ready %.0f s, workloads reachable %.0f s after POST /clusters (set-up excluded)",
			len(c.machines), len(c.machines), tl.at("every node Ready").Seconds(), tl.at("workloads reachable").Seconds())
		return
	}
	if focused := focusedSteps(); len(focused) > 0 {
		var names []string
		for _, f := range focused {
			held = append(held, f.steps(p, t)...)
			names = append(names, f.name)
		}
		tl.finish(t)
		t.Logf("e2e (bring-up and %s only): %s", strings.Join(names, " and "), strings.Join(held, "; "))
		return
	}
	pods := c.probePods(t)
	held = append(held, c.checkIMDSThroughService(t, pods[0], pods[1], p.svc))
	held = append(held, c.checkRenewal(t, tl))
	held = append(held, c.checkHardening(t)...)
	tl.mark("secrets encrypted at rest, anonymous refused")
	held = append(held, p.checkExecKubeconfig(t)...)
	rebooted := c.checkReboot(t, len(c.machines)-1, tl)
	held = append(held, "a rebooted node came back Ready with etcd quorum kept", c.checkConformanceSubset(t, p, tl))
	// After the subset: the lifecycle replaces a node and restores into a
	// new cluster, and the subset judges the cluster as founded.
	held = append(held, p.checkEtcdLifecycle(t)...)
	if os.Getenv(scalingEnv) == "1" {
		// Its own target (make e2e-scaling): CI's time holds it or the
		// upgrade's three replacements, which are to take its place.
		held = append(held, p.checkScaling(t)...)
	}
	held = append(held, p.checkPool(t)...) // last: its workers taint the control plane
	held = append(held, tl.remediationSummary())
	tl.finish(t)
	t.Logf("e2e: %d/%d nodes Ready; %s; nodes Ready %.0f s, workloads reachable %.0f s after POST /clusters (set-up excluded); rebooted node Ready again in %.0f s",
		len(c.machines), len(c.machines), strings.Join(held, "; "),
		tl.at("every node Ready").Seconds(), tl.at("workloads reachable").Seconds(), rebooted.Seconds())
}

// scalingEnv adds the control-plane scaling 3 → 5 → 3 to the default run
// when "1" (E2E_SCALING_ONLY=1 runs it alone after the bring-up).
const scalingEnv = "E2E_SCALING"

// focusedRun does the bring-up then one step only, when its variable is
// 1: an iteration on that step skips the renewals, the reboot and the
// conformance subset. Several variables set run their steps in the
// default run's order (the pool after the etcd lifecycle: the pool joins
// a cluster whose node was replaced). The default run does every step.
type focusedRun struct {
	name, env string
	steps     func(*provenCluster, *testing.T) []string
}

var focusedRuns = []focusedRun{
	{"etcd lifecycle", "E2E_ETCD_LIFECYCLE_ONLY", (*provenCluster).checkEtcdLifecycle},
	{"control-plane scaling", "E2E_SCALING_ONLY", (*provenCluster).checkScaling},
	{"pool", "E2E_POOL_ONLY", (*provenCluster).checkPool},
	{"exec kubeconfig", "E2E_EXEC_KUBECONFIG_ONLY", (*provenCluster).checkExecKubeconfig},
}

// focusedSteps are the focused runs asked for (their variables set to
// 1), in focusedRuns' order; none for the default run.
func focusedSteps() []focusedRun {
	var asked []focusedRun
	for _, f := range focusedRuns {
		if os.Getenv(f.env) == "1" {
			asked = append(asked, f)
		}
	}
	return asked
}

// provenCluster is a cluster founded through the API whose VMs booted as
// machines and ran their userdata to the end.
type provenCluster struct {
	r       *harness.Run
	st      stack
	cl      clusterResponse
	vms     []vm
	network *harness.Network
	svc     services
	c       *machineCluster
	tl      *timeline
	image   string // the node image's root filesystem
}

// bringUpCluster founds a three-node cluster with the proof's CNI through the stack
// (started with the air-gapped configuration and env), serves the node
// network its mirror, registry (with the conformance suite's images) and
// resolver, boots every VM and waits until the API says the cluster is
// ready. Everything is torn down when the test ends.
func bringUpCluster(t *testing.T, tag string, env []string) *provenCluster {
	image := nodeImage(t)
	roots := testImageRoots(t)
	requireComponents(t, "conformance")
	var workDir string
	t.Cleanup(func() { removePassedRun(t, workDir) }) // after the run's teardown
	p := &provenCluster{r: newRun(t, tag), tl: newTimeline(), image: image}
	workDir = p.r.WorkDir
	mirrorDir := filepath.Join(p.r.WorkDir, "mirror")
	if _, err := harness.BuildMirror(binDir, mirrorDir, nodeVersions); err != nil {
		fatal(t, err)
	}
	p.st = startStack(t, p.r, slices.Concat(mirrorEnv(mirrorDir), objectStoreEnv(), caRotationStackEnv, env)...)
	p.tl.start()
	// Remediation off until its own step (nodes_etcd_test.go): the proof
	// reboots and stops machines on purpose.
	p.cl = foundCluster(t, p.r, p.st, 3, fmt.Sprintf(`"cni":%q`, proofCNI), `"unhealthy_after":"0"`)
	p.tl.mark("POST /clusters answered")
	p.tl.setUpStarts()
	p.vms = loadVMs(t, p.st, p.cl.ControlPlaneVMIDs)
	p.network = nodeNetwork(t, p.r, p.vms)
	p.svc = serveServices(t, p.r, p.st, p.network, image, roots, mirrorDir)
	p.c = bootCluster(t, p.r, image, p.network, p.vms, p.svc)
	p.tl.setUpEnds()
	p.c.applyProbeEarly(t)
	t.Cleanup(p.c.saveJournals)
	p.c.waitUserdata(t, p.tl)
	p.c.waitBootstrapReady(t, p.st, p.cl.ClusterID, p.tl)
	return p
}

// nodeNetwork makes one namespace per VM with the address the simulator
// gave it, on a switch that also holds the services address.
func nodeNetwork(t *testing.T, r *harness.Run, vms []vm) *harness.Network {
	t.Helper()
	addrs := make([]netip.Prefix, 0, len(vms))
	for _, v := range vms {
		addrs = append(addrs, v.addr)
	}
	network, err := harness.NewNetwork(r.ID, addrs)
	if err != nil {
		fatal(t, err)
	}
	r.SetNetwork(network)
	return network
}

// serveServices starts, on the switch at the services address: the
// artifact mirror, the registry (with every image pushed), the subnet's
// DNS resolver, and forwards to the local stack's API and IMDS.
func serveServices(t *testing.T, r *harness.Run, st stack, network *harness.Network, image string, roots harness.TestImageRoots, mirrorDir string) services {
	t.Helper()
	sw := network.Switch
	l, err := harness.ListenIn(sw, svcAddr(mirrorPort))
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	harness.ServeMirror(l, mirrorDir)
	svc := services{mirrorDir: mirrorDir}
	svc.apiURL = forwardToHost(t, sw, st.get(t, "API_URL"))
	svc.simURL = forwardToHost(t, sw, st.get(t, "SIM_URL"))
	relayTo(t, sw, objectStorePort, st.get(t, "AWS_ENDPOINT_URL"))
	svc.resolverHosts = startResolver(t, r, sw)
	syncPlatformHosts(t, st, svc.resolverHosts)
	if _, err := harness.StartRegistry(r, binDir, sw, svcAddr(registryPort), filepath.Join(r.WorkDir, "registry")); err != nil {
		fatal(t, err)
	}
	pushImages(t, r, sw, image, roots)
	return svc
}

// forwardToHost relays the services address's port to a URL on the host's
// loopback and returns the URL as the nodes see it.
func forwardToHost(t *testing.T, sw, hostURL string) string {
	t.Helper()
	u, err := url.Parse(hostURL)
	if err != nil {
		fatal(t, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		fatalf(t, "%s names no port", hostURL)
	}
	return relayTo(t, sw, port, hostURL)
}

// relayTo relays port on the services address to a URL on the host's
// loopback and returns the URL as the nodes see it.
func relayTo(t *testing.T, sw string, port int, hostURL string) string {
	t.Helper()
	u, err := url.Parse(hostURL)
	if err != nil {
		fatal(t, err)
	}
	l, err := harness.Forward(sw, svcAddr(port), u.Host)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return "http://" + svcAddr(port)
}

// startResolver runs the built CoreDNS as the subnet's resolver (what a
// cloud's VPC DNS is to a VM): it knows the platform's names, those of its
// services and the records k8sapi creates through the DNS API (the
// control-plane name: pods reach the service-account issuer by it), and
// answers NXDOMAIN for everything else, as a resolver cut off from the
// internet. It returns the hosts file it reads the records from (CoreDNS
// reloads it when it changes), and answers its names with the TTL the
// stack writes the control-plane name with (hosts' default is an hour: a
// node's caching resolver would keep a moved name's old address).
func startResolver(t *testing.T, r *harness.Run, sw string) string {
	t.Helper()
	dir := filepath.Join(r.WorkDir, "resolver")
	hosts := filepath.Join(dir, "platform.hosts")
	// The names it knows come from hosts; every other name falls through
	// to an empty root zone, which answers NXDOMAIN with its SOA (CoreDNS
	// runs its plugins in a fixed order, whatever the Corefile's).
	corefile := fmt.Sprintf(`.:%d {
    bind %s
    hosts %s {
        %s imdsapi.excloud.in
        ttl %d
        reload 1s
        fallthrough
    }
    file %s .
}
`, dnsPort, harness.ResolverAddr, hosts, harness.ServicesAddr, controlPlaneDNSTTL, filepath.Join(dir, "root.zone"))
	rootZone := "$ORIGIN .\n@ 300 IN SOA resolver.invalid. hostmaster.invalid. 1 7200 3600 1209600 300\n@ 300 IN NS resolver.invalid.\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(t, err)
	}
	for path, content := range map[string]string{filepath.Join(dir, "Corefile"): corefile, filepath.Join(dir, "root.zone"): rootZone, hosts: ""} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			fatal(t, err)
		}
	}
	argv := []string{filepath.Join(binDir, "coredns"), "-conf", filepath.Join(dir, "Corefile")}
	if _, err := r.Start("resolver", harness.Host{NS: sw}, dir, os.Environ(), argv); err != nil {
		fatal(t, err)
	}
	return hosts
}

// writePlatformHosts writes the A records the platform's DNS holds (the
// simulator's, which k8sapi's founding wrote through the DNS API) as the
// resolver's hosts file.
func writePlatformHosts(t *testing.T, st stack, path string) {
	t.Helper()
	hosts, err := platformHosts(st.get(t, "SIM_URL"))
	if err == nil {
		err = writeHostsFile(path, hosts)
	}
	if err != nil {
		fatal(t, err)
	}
	t.Logf("the resolver knows the platform's records:\n%s", hosts)
}

// syncPlatformHosts keeps the resolver's hosts file at the platform's
// records from now until the test ends: it reads them every second and
// rewrites the file when they changed, as a real resolver follows the DNS
// API (k8sapi moves the control-plane name during a CA rotation, and the
// API probe must follow it as a client would). The explicit
// writePlatformHosts calls stay: they make a step's records known at once.
func syncPlatformHosts(t *testing.T, st stack, path string) {
	t.Helper()
	writePlatformHosts(t, st, path)
	simURL, stop, done := st.get(t, "SIM_URL"), make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				rewriteHostsIfChanged(t, simURL, path)
			}
		}
	}()
}

// rewriteHostsIfChanged writes the platform's records to path when they
// differ from what it holds (CoreDNS reloads the file on a change only).
// A failed read is logged: the next tick tries again.
func rewriteHostsIfChanged(t *testing.T, simURL, path string) {
	hosts, err := platformHosts(simURL)
	if err != nil {
		t.Logf("reading the platform's records: %v", err)
		return
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == hosts {
		return
	}
	if err := writeHostsFile(path, hosts); err != nil {
		t.Logf("writing the resolver's hosts: %v", err)
		return
	}
	t.Logf("the platform's records changed; the resolver knows:\n%s", hosts)
}

// writeHostsFile replaces the hosts file at path with hosts in one rename:
// the step's writes and the sync's may meet, and CoreDNS must never read
// a file half written (an empty one answers NXDOMAIN).
func writeHostsFile(path, hosts string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hosts-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(hosts)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		return os.Rename(tmp.Name(), path)
	}
	_ = os.Remove(tmp.Name())
	return err
}

// platformHosts is the A records the platform's DNS holds (the
// simulator's) as a hosts file.
func platformHosts(simURL string) (string, error) {
	var list struct {
		Records []struct {
			Zone  string `json:"zone_name"`
			Name  string `json:"name"`
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"records"`
	}
	if err := fetchJSON(simURL+"/_sim/dns", &list); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, rec := range list.Records {
		if rec.Type == "A" {
			fmt.Fprintf(&b, "%s %s\n", rec.Value, fqdn(rec.Name, rec.Zone))
		}
	}
	return b.String(), nil
}

// getJSON decodes the answer of a GET on the host's loopback into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := fetchJSON(url, v); err != nil {
		fatal(t, err)
	}
}

// fetchJSON decodes the answer of a GET on the host's loopback into v.
func fetchJSON(url string, v any) error {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// fqdn is a record's full name: names in the DNS API may be relative to
// their zone.
func fqdn(name, zone string) string {
	name, zone = strings.TrimSuffix(name, "."), strings.TrimSuffix(zone, ".")
	if zone == "" || name == zone || strings.HasSuffix(name, "."+zone) {
		return name
	}
	return name + "." + zone
}

// pushImages builds every image the static pods and addons name, the
// test workload's and the founding release's conformance suite's, and
// pushes them to the registry.
func pushImages(t *testing.T, r *harness.Run, sw, image string, roots harness.TestImageRoots) {
	t.Helper()
	images := slices.Concat(harness.ProofImages(nodeVersions.Kubernetes, corednsVersion, pauseVersion, flannelVersion, image),
		harness.ReleaseImages(upgradeRelease, image), []harness.Image{probeImage(image)},
		suiteOf(t, nodeVersions.Kubernetes).testImages(t, roots))
	pushToRegistry(t, r, sw, images)
}

// pushToRegistry builds images and pushes them to the proof's registry,
// retrying while it starts.
func pushToRegistry(t *testing.T, r *harness.Run, sw string, images []harness.Image) {
	t.Helper()
	transport := &http.Transport{DialContext: harness.Dialer(sw)}
	eventually(t, r, "images pushed to the registry", []string{"registry"}, 3*time.Minute, func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := harness.PushImages(ctx, images, binDir, nodeVersions.Arch, svcAddr(registryPort), transport); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d images", len(images)), nil
	})
}

// probeImage is the test workload: the node image's userland (curl,
// getent, socat) serving its pod's name over HTTP on 8080.
func probeImage(rootfs string) harness.Image {
	return harness.Image{Repo: "e2e/probe", Tag: "1", BaseRootfs: rootfs,
		Entrypoint: []string{"/bin/bash", "-c", `printf '%s\n' ` + shellQuote(probeReply) + ` >/probe-reply && chmod +x /probe-reply &&
echo "probe $(hostname) listening on 8080" && exec socat TCP-LISTEN:8080,fork,reuseaddr EXEC:/probe-reply`}}
}

// shellQuote is s as one single-quoted word of a shell command.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// probeReply answers one connection of the probe workload: it reads the
// request to its blank line before it answers. A reply that closes the
// socket with the request still unread makes the kernel send a reset,
// which can reach the client before it read the answer: curl's "empty
// reply from server", now and then, under load (seen in the probes of
// the CA rotation, 1 to 5 of about 1000). curl takes the answer as
// HTTP/1.0.
const probeReply = `#!/bin/bash
while IFS= read -r -t 5 line && [[ -n ${line%$'\r'} ]]; do :; done
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nprobe %s\n' "$(hostname)"`

// removePassedRun deletes a passed run's work folder (machine disks, the
// registry's blobs: gigabytes a run); a failed run's stays for a look.
// The logs and journals are kept either way.
func removePassedRun(t *testing.T, workDir string) {
	if t.Failed() || workDir == "" {
		return
	}
	if err := os.RemoveAll(workDir); err != nil {
		t.Logf("removing %s: %v", workDir, err)
	}
}
