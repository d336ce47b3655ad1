package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The versions the node proof founds its cluster with: what
// build-components.sh builds and the mirror and registry serve.
var nodeVersions = harness.MirrorVersions{
	Kubernetes: "v1.35.4", Etcd: "v3.6.16", Containerd: "v2.2.9", Runc: "v1.3.6", CNIPlugins: "v1.9.1",
	Arch: runtime.GOARCH,
}

const (
	corednsVersion = "v1.13.1"
	pauseVersion   = "3.10.1"
	// Ports on harness.ServicesAddr; the API's and IMDS's follow the stack's.
	mirrorPort   = 80
	registryPort = 5000
	dnsPort      = 53
)

// services is what the node network reaches at harness.ServicesAddr.
type services struct {
	mirrorDir string
	apiURL    string // the local gateway, as the nodes see it
	simURL    string // the platform simulator (IMDS), as the nodes see it
}

func svcAddr(port int) string { return fmt.Sprintf("%s:%d", harness.ServicesAddr, port) }

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
// the API with the bridge CNI, each VM booted as a systemd machine that
// runs the userdata it was given, every download from a mirror and every
// image from a registry on the node network, and the result a working
// three-node cluster.
func TestNodesBecomeACluster(t *testing.T) {
	image := nodeImage(t)
	requireComponents(t, "nodes")
	var workDir string
	t.Cleanup(func() { removePassedRun(t, workDir) }) // after the run's teardown
	r := harness.NewRun(t, e2eDir, "nodes")
	workDir = r.WorkDir
	tl := newTimeline()
	mirrorDir := filepath.Join(r.WorkDir, "mirror")
	if _, err := harness.BuildMirror(binDir, mirrorDir, nodeVersions); err != nil {
		t.Fatal(err)
	}
	st := startStack(t, r, append(mirrorEnv(mirrorDir), shortLeavesEnv...)...)
	tl.start()
	cl := foundCluster(t, r, st, 3, `"cni":"bridge"`)
	tl.mark("POST /clusters answered")
	vms := loadVMs(t, st, cl.ControlPlaneVMIDs)
	network := nodeNetwork(t, r, vms)
	svc := serveServices(t, r, st, network, image, mirrorDir)
	tl.mark("mirror, registry and images ready")
	c := bootCluster(t, r, image, network, vms, svc)
	t.Cleanup(c.saveJournals)
	c.waitUserdata(t, tl)
	c.waitBootstrapReady(t, st, cl.ClusterID, tl)
	c.checkUnits(t)
	c.checkAddonsOnInitialOnly(t)
	c.checkNodesReady(t, vms, tl)
	c.checkMirrorPods(t)
	tl.mark("every static pod Running")
	c.checkAddonsReady(t)
	tl.mark("kube-proxy and CoreDNS ready")
	held := c.checkWorkloads(t, svc, tl)
	pods := c.probePods(t)
	held = append(held, c.checkIMDSThroughService(t, pods[0], pods[1], svc))
	held = append(held, c.checkRenewal(t, tl))
	held = append(held, c.checkHardening(t)...)
	tl.mark("secrets encrypted at rest, anonymous refused")
	c.checkReboot(t, len(c.machines)-1, tl)
	tl.report(t)
	t.Logf("e2e: %d/%d nodes Ready; %s; time to ready %.0f s", len(c.machines), len(c.machines),
		strings.Join(append(held, "a rebooted node came back Ready with etcd quorum kept"), "; "), tl.at("every node Ready").Seconds())
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
		t.Fatal(err)
	}
	r.SetNetwork(network)
	return network
}

// serveServices starts, on the switch at the services address: the
// artifact mirror, the registry (with every image pushed), the subnet's
// DNS resolver, and forwards to the local stack's API and IMDS.
func serveServices(t *testing.T, r *harness.Run, st stack, network *harness.Network, image, mirrorDir string) services {
	t.Helper()
	sw := network.Switch
	l, err := harness.ListenIn(sw, svcAddr(mirrorPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	harness.ServeMirror(l, mirrorDir)
	svc := services{mirrorDir: mirrorDir}
	svc.apiURL = forwardToHost(t, sw, st.get(t, "API_URL"))
	svc.simURL = forwardToHost(t, sw, st.get(t, "SIM_URL"))
	startResolver(t, r, sw)
	if _, err := harness.StartRegistry(r, binDir, sw, svcAddr(registryPort), filepath.Join(r.WorkDir, "registry")); err != nil {
		t.Fatal(err)
	}
	pushImages(t, r, sw, image)
	return svc
}

// forwardToHost relays the services address's port to a URL on the host's
// loopback and returns the URL as the nodes see it.
func forwardToHost(t *testing.T, sw, hostURL string) string {
	t.Helper()
	u, err := url.Parse(hostURL)
	if err != nil {
		t.Fatal(err)
	}
	l, err := harness.Forward(sw, fmt.Sprintf("%s:%s", harness.ServicesAddr, u.Port()), u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return fmt.Sprintf("http://%s:%s", harness.ServicesAddr, u.Port())
}

// startResolver runs the built CoreDNS as the subnet's resolver (what a
// cloud's VPC DNS is to a VM): it knows the platform's names and answers
// NXDOMAIN for everything else, as a resolver cut off from the internet.
func startResolver(t *testing.T, r *harness.Run, sw string) {
	t.Helper()
	dir := filepath.Join(r.WorkDir, "resolver")
	corefile := fmt.Sprintf(`.:%d {
    bind %s
    hosts {
        %s imdsapi.excloud.in
        fallthrough
    }
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, dnsPort, harness.ServicesAddr, harness.ServicesAddr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{filepath.Join(binDir, "coredns"), "-conf", filepath.Join(dir, "Corefile")}
	if _, err := r.Start("resolver", harness.Host{NS: sw}, dir, os.Environ(), argv); err != nil {
		t.Fatal(err)
	}
}

// pushImages builds every image the static pods and addons name, and the
// test workload's, and pushes them to the registry, retrying while it
// starts.
func pushImages(t *testing.T, r *harness.Run, sw, image string) {
	t.Helper()
	images := append(harness.ProofImages(nodeVersions.Kubernetes, corednsVersion, pauseVersion, image), probeImage(image))
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
		Entrypoint: []string{"/bin/bash", "-c",
			// socat reads backslash escapes (and ':' and ',') in its
			// addresses itself: the reply is plain echo lines, which curl
			// takes as HTTP/1.0.
			`echo "probe $(hostname) listening on 8080"; exec socat TCP-LISTEN:8080,fork,reuseaddr SYSTEM:'echo HTTP/1.0 200 OK; echo; echo probe $(hostname)'`}}
}

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
