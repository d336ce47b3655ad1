package bundle

import (
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// The cluster addons at an upgrade's release (docs/UPGRADES.md, "The
// order"): the initial node's addons script installs them once; an
// upgrade moves them once every API server is at the pass's version. The
// node k8sapi chooses (one ready control-plane node at that version) asks
// every minute (exk8s-upgrade-addons.timer, on every control-plane node),
// is answered the manifests Addons renders at the pass's release, which
// are the templates the founding's bundle renders, applies them in order
// with its addons identity (pki.AddonsApplier), waits for each rollout and
// reports. Every other node is answered nothing.
const (
	// AddonsUser is the addons identity, whom RBAC names.
	AddonsUser = "exk8s:addons"
	// AddonsUnit names the timer, service and script.
	AddonsUnit           = "exk8s-upgrade-addons"
	AddonsScript         = binDir + "/" + AddonsUnit + ".sh"
	addonsKubeconfigStem = "addons"
	// AddonsAskEvery is how often a control-plane node asks.
	AddonsAskEvery = time.Minute
	// AddonsRolloutWithin bounds the wait for each addon's rollout on the
	// node; AddonsApplyWithin the node's whole run (three rollouts, the
	// applies, the calls), its service's TimeoutStartSec.
	AddonsRolloutWithin = 5 * time.Minute
	AddonsApplyWithin   = 18 * time.Minute
	// AddonsReportWithin is how long the upgrade waits for the chosen
	// node's report before it pauses naming the node: its first ask, its
	// run, and a retried report.
	AddonsReportWithin = AddonsApplyWithin + 5*AddonsAskEvery
)

// Addon is one cluster addon's manifest: its file name, the rollout that
// says it runs (kubectl rollout status's argument, in kube-system) and
// its content.
type Addon struct {
	Name    string `json:"name"`
	Rollout string `json:"rollout"`
	Content string `json:"content"`
}

// addonRow is a row of the addons table: the manifest (its template's
// name too), its rollout, and the one CNI whose clusters run it ("":
// every cluster).
type addonRow struct {
	Name, Rollout string
	cni           clusterfacts.CNI
}

// addons is the one table of the cluster addons, in the order they are
// applied: flannel first (no pod gets an address until flanneld wrote its
// node's lease), kube-proxy before CoreDNS (which reaches the API through
// the kubernetes Service that kube-proxy's rules route). Cilium is
// installed by helm at the founding's chart version, which no release
// moves.
var addons = []addonRow{
	{Name: "flannel.yaml", Rollout: "daemonset/flannel", cni: clusterfacts.CNIFlannel},
	{Name: "kube-proxy.yaml", Rollout: "daemonset/kube-proxy"},
	{Name: "coredns.yaml", Rollout: "deployment/coredns"},
}

// addonsOf is the addons a cluster of cni runs, in order.
func addonsOf(cni clusterfacts.CNI) []addonRow {
	var out []addonRow
	for _, a := range addons {
		if a.cni == "" || a.cni == cni {
			out = append(out, a)
		}
	}
	return out
}

// Addons renders c's addons, in the order they are applied, at c's
// Kubernetes version with the artifact set a (the cluster's record at
// that release): the same templates and data a control-plane bundle's
// manifests are rendered from.
func (r *Renderer) Addons(c clusterfacts.Cluster, a artifacts.Set) ([]Addon, error) {
	v, err := addonsData(c, a)
	if err != nil {
		return nil, err
	}
	var out []Addon
	for _, row := range addonsOf(c.CNI) {
		content, err := r.execute(row.Name, v)
		if err != nil {
			return nil, fmt.Errorf("rendering the addon %s: %w", row.Name, err)
		}
		out = append(out, Addon{Name: row.Name, Rollout: row.Rollout, Content: content})
	}
	return out, nil
}

// addonsData is what the addons' templates read of a node's view: the
// cluster, its DNS service address, its images and kube-proxy's and
// flannel's settings (nodeView's, without a node).
func addonsData(c clusterfacts.Cluster, a artifacts.Set) (*view, error) {
	_, dns, err := clusterfacts.ServiceIPs(c.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	v := &view{Cluster: c, Artifacts: a, DNSServiceIP: dns.String(), CNI: string(c.CNI),
		Images: newImagesView(a, c.KubernetesVersion, c.CNI), KubeProxy: newKubeProxyView(c)}
	if c.CNI == clusterfacts.CNIFlannel {
		v.Flannel = newFlannelView(c)
	}
	return v, nil
}

// addonsView is what the timer, service and script know: the identity's
// kubeconfig, the bounds and how often to ask.
type addonsView struct {
	Unit, Timer, Kubeconfig, User    string
	RolloutSeconds, ApplySeconds     int
	AskEverySeconds, AccuracySeconds int
}

func newAddonsView() addonsView {
	sec := func(d time.Duration) int { return int(d / time.Second) }
	return addonsView{Unit: AddonsUnit, User: AddonsUser, Timer: AddonsUnit + ".timer", Kubeconfig: KubeconfigPath(addonsKubeconfigStem),
		RolloutSeconds: sec(AddonsRolloutWithin), ApplySeconds: sec(AddonsApplyWithin),
		AskEverySeconds: sec(AddonsAskEvery), AccuracySeconds: 5}
}

// addonsUpgradePart installs the addons timer, service and script on
// every control-plane node (any may be the one chosen).
func addonsUpgradePart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/"+AddonsUnit+".timer", AddonsUnit+".timer", modePublic, v),
		tmpl(unitDir+"/"+AddonsUnit+".service", AddonsUnit+".service", modePublic, v),
		tmpl(AddonsScript, AddonsUnit+".sh", modeScript, v),
	}
}
