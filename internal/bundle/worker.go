package bundle

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/validation"
)

// A worker's bundle is rendered through the same parts as a control-plane
// node's, fewer of them: the cluster CA's certificate (never a key), the
// cluster's facts, containerd, the kubelet, the pod network and the
// scripts. No private key, no kubeconfig, no etcd, no static pod: the
// worker makes its own keys and sends their requests to k8sapi
// (exk8s-bootstrap-worker.sh), whose answers admit it to the cluster.

// Taint is a taint a worker's kubelet registers its Node with.
type Taint struct{ Key, Value, Effect string }

// WorkerInput is everything a worker's bundle is rendered from.
type WorkerInput struct {
	Cluster clusterfacts.Cluster
	// ControlPlane is every control-plane node of the cluster: the bridge
	// CNI routes their pod subnets.
	ControlPlane []clusterfacts.Node
	Worker       clusterfacts.Node
	Pool         string
	Labels       map[string]string
	Taints       []Taint
	Artifacts    artifacts.Set
	CACert       []byte // the cluster CA's certificate PEM
}

// workerParts is the ordered list of a worker's components.
func workerParts() []part {
	return []part{
		{"pki", workerPKIPart},
		{"host-config", hostConfigPart},
		{"containerd", containerdPart},
		{"kubelet", kubeletPart},
		{"network", podNetworkPart},
		{"drain", drainPart},
		{"renewal", workerRenewalPart},
		{"health", healthPart},
		{"scripts", workerScriptPart},
	}
}

// workerRenewalPart installs the daily renewal as a control-plane node's
// (the same timer and unit), with the worker's script at its path.
func workerRenewalPart(v *view) []fileSpec {
	return renewalFiles(v, "exk8s-renew-worker-certificates.sh")
}

// workerView is what a worker's templates know beyond a node's: its pool's
// labels and taints as the kubelet's flags take them, and where its script
// writes what it makes.
type workerView struct {
	Pool           string
	NodeLabels     string // k=v,... sorted by key; empty: none
	RegisterTaints string // k=v:Effect,... in the pool's order; empty: none
	CACert         string
	ClientCert     string
	ClientKey      string
	ServingCert    string
	ServingKey     string
	Kubeconfig     string
	KubeletDropins string
	// Renewed are the identities its renewal script renews, over the
	// keys its bootstrap made (the kubelet reads both).
	Renewed []renewableIdentity
	// Trust are the trust files a rotation rewrites (trustLines).
	Trust []string
	caPEM []byte
}

// KubeletDropinDir holds host-specific kubelet settings, drop-ins over the
// rendered config (kubelet --config-dir), so no rendered file is edited.
const KubeletDropinDir = "/etc/kubernetes/kubelet.conf.d"

func newWorkerView(in *WorkerInput) *workerView {
	all := maps.Clone(in.Labels)
	if all == nil {
		all = map[string]string{}
	}
	// What tells a worker's Node (taint.go); the API refuses a pool label
	// of this key, and a stored one is rendered over.
	all[WorkerPoolLabel] = in.Pool
	labels := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		labels = append(labels, k+"="+all[k])
	}
	taints := make([]string, len(in.Taints))
	for i, t := range in.Taints {
		taints[i] = t.Key + "=" + t.Value + ":" + t.Effect
	}
	return &workerView{
		Pool: in.Pool, NodeLabels: strings.Join(labels, ","), RegisterTaints: strings.Join(taints, ","),
		CACert:     CertPath(pki.ClusterCA),
		ClientCert: CertPath(pki.KubeletClient), ClientKey: KeyPath(pki.KubeletClient),
		ServingCert: CertPath(pki.KubeletServing), ServingKey: KeyPath(pki.KubeletServing),
		Kubeconfig: KubeconfigPath("kubelet"), KubeletDropins: KubeletDropinDir, caPEM: in.CACert,
		Renewed: []renewableIdentity{workerRenewed(pki.KubeletClient), workerRenewed(pki.KubeletServing)},
		Trust:   trustLines(workerTrust),
	}
}

// workerRenewed is the renewal's line of name, a key the worker made.
func workerRenewed(name pki.Name) renewableIdentity {
	return renewableIdentity{Name: name, KeyPath: KeyPath(name), CertPath: CertPath(name), Component: readerOf[name]}
}

// RenderWorker renders the bundle of in.Worker: files and no key.
func (r *Renderer) RenderWorker(in WorkerInput) ([]File, error) {
	if err := in.validate(); err != nil {
		return nil, fmt.Errorf("invalid worker bundle input: %w", err)
	}
	v, err := workerViewOf(in)
	if err != nil {
		return nil, err
	}
	return r.renderParts(v, workerParts())
}

// workerViewOf is the view of in's worker: a node's, reaching the API
// server by the control plane's name, with its pool's settings.
func workerViewOf(in WorkerInput) (*view, error) {
	topo, err := newTopology(append(slices.Clone(in.ControlPlane), in.Worker), in.Worker.VMID)
	if err != nil {
		return nil, err
	}
	v, err := nodeView(in.Cluster, in.Artifacts, topo)
	if err != nil {
		return nil, err
	}
	v.APIServerEndpoint = WorkerAPIServerURL(in.Cluster)
	v.Worker = newWorkerView(&in)
	v.Drain = newDrainView(v, true)
	v.Health = newHealthView("worker_health")
	return v, nil
}

// WorkerAPIServerURL is where a worker reaches the API server: the control
// plane's DNS name, which names every control-plane node (the API server's
// certificate carries it), so no one node's loss cuts the workers off.
func WorkerAPIServerURL(c clusterfacts.Cluster) string {
	return "https://" + c.ControlPlaneDNSName + ":6443"
}

// workerPKIPart writes the cluster CA's certificate: all a worker is
// given of the cluster's trust.
func workerPKIPart(v *view) []fileSpec {
	return []fileSpec{{path: CertPath(pki.ClusterCA), mode: modePublic, raw: v.Worker.caPEM}}
}

// workerScriptPart writes the prerequisites script (a worker's installs no
// etcd and no helm), the worker's bootstrap script and the shell library.
func workerScriptPart(v *view) []fileSpec {
	var out []fileSpec
	for _, s := range []string{"exk8s-install-prereqs.sh", "exk8s-bootstrap-worker.sh", "exk8s-progress.sh"} {
		out = append(out, tmpl(binDir+"/"+s, s, modeScript, v))
	}
	return out
}

var (
	// Labels and taints become kubelet flags in a unit file: the API
	// validated them (founding's pool rules); these are the renderer's own
	// guard that nothing else slips into the unit.
	labelTokenRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$`)
	taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

// validate collects every problem of a worker's input with its field path.
func (in *WorkerInput) validate() error {
	nodes := append(slices.Clone(in.ControlPlane), in.Worker)
	return validation.Join(clusterRules(in.Cluster), networkRules(in.Cluster, nodes), nodeRules(nodes, in.Worker.VMID),
		artifactRules(in.Artifacts), in.workerRules())
}

func (in *WorkerInput) workerRules() []validation.Rule {
	rules := []validation.Rule{
		rule("control_plane", len(in.ControlPlane) > 0, "must list the cluster's control-plane nodes"),
		rule("ca_cert", len(in.CACert) > 0, "missing"),
		rule("pool", dnsNameRE.MatchString(in.Pool), got("must be a lowercase DNS label", in.Pool)),
	}
	for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
		rules = append(rules, rule("labels["+k+"]", labelTokenRE.MatchString(k) && labelValueRE.MatchString(in.Labels[k]),
			got("must be a label key and value", k+"="+in.Labels[k])))
	}
	for i, t := range in.Taints {
		rules = append(rules, rule(fmt.Sprintf("taints[%d]", i),
			labelTokenRE.MatchString(t.Key) && labelValueRE.MatchString(t.Value) && slices.Contains(taintEffects, t.Effect),
			got("must be a taint key, value and effect", t.Key+"="+t.Value+":"+t.Effect)))
	}
	return rules
}
