package upgrade

import (
	"fmt"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
)

// facts are what the gates judge: the cluster, its nodes as they
// reported, the chain asked for, whether the operator overrode the
// deprecated-API gate, and the time they are judged at.
type facts struct {
	cluster  store.Cluster
	nodes    []store.Node
	passes   []apitypes.UpgradePass
	override bool
	now      time.Time
}

// gate is one preflight gate: its name (in the plan and the refusal), its
// code, and its judgement (nil: passed).
type gate struct {
	name      string
	code      apperr.Code
	judge     func(facts) error
	overrides bool // the operator may let it fail (allow_deprecated_apis)
}

// gates is the one table of the preflight gates, in the order they are
// judged; the pre-upgrade snapshot is the operation's first step
// (snapshotGate), judged while it runs.
var gates = []gate{
	{name: "nodes_ready", code: apperr.UpgradeNodesNotReady, judge: nodesReady},
	{name: "etcd_healthy", code: apperr.UpgradeEtcdUnhealthy, judge: etcdHealthy},
	{name: "version_skew", code: apperr.UpgradeVersionSkew, judge: versionSkew},
	{name: "deprecated_apis", code: apperr.UpgradeDeprecatedAPIs, judge: noRemovedAPIs, overrides: true},
}

// snapshotGate is the gate the operation itself passes before the first
// node moves.
var snapshotGate = apitypes.UpgradeGate{Name: "etcd_snapshot", Pending: true,
	Detail: "an etcd snapshot is taken and its upload verified before the first node moves"}

// live are the nodes that stay: their VM exists and they are not retiring.
func live(nodes []store.Node) []store.Node {
	var out []store.Node
	for _, n := range nodes {
		if n.VMID != 0 && !n.Retiring {
			out = append(out, n)
		}
	}
	return out
}

func ready(n store.Node) bool { return n.ReadyAt != nil && n.Phase == "ready" }

// nodesReady: every node has a VM, is not being removed, and its last
// report is ready (a failed renewal, or a bootstrap under way, is not).
func nodesReady(f facts) error {
	var not []string
	for _, n := range f.nodes {
		switch {
		case n.VMID == 0:
			not = append(not, n.Name+" (no VM yet)")
		case n.Retiring:
			not = append(not, n.Name+" (being removed)")
		case n.Phase != "ready":
			not = append(not, fmt.Sprintf("%s (%s)", n.Name, n.Phase))
		}
	}
	if len(not) > 0 {
		return fmt.Errorf("not ready and reporting: %s", strings.Join(not, ", "))
	}
	return nil
}

// etcdHealthy: the control plane has its count of members, each of which
// is voting: its node reported ready in its bootstrap, which a node does
// only once its member was promoted from learner and serves.
func etcdHealthy(f facts) error {
	var members, voting []string
	for _, n := range live(f.nodes) {
		if n.Role == store.RoleWorker {
			continue
		}
		members = append(members, n.Name)
		if n.ReadyAt != nil {
			voting = append(voting, n.Name)
		}
	}
	if len(voting) != f.cluster.ControlPlaneCount || len(members) != f.cluster.ControlPlaneCount {
		return fmt.Errorf("%d of the cluster's %d etcd members are voting and healthy (%s)",
			len(voting), f.cluster.ControlPlaneCount, strings.Join(voting, ", "))
	}
	return nil
}

// versionSkew holds upstream's skew policy over the whole chain: no
// kubelet is newer than the oldest API server now, and none would be more
// than three minors older than the API servers after the first pass (each
// pass moves every kubelet too, so later passes keep the same skew).
func versionSkew(f facts) error {
	oldestAPI := -1
	for _, n := range live(f.nodes) {
		if m := minorOf(n.KubernetesVersion); n.Role != store.RoleWorker && (oldestAPI < 0 || m < oldestAPI) {
			oldestAPI = m
		}
	}
	target := minorOf(f.passes[0].To)
	for _, n := range live(f.nodes) {
		switch m := minorOf(n.KubernetesVersion); {
		case m > oldestAPI:
			return fmt.Errorf("%s's kubelet is at %s, newer than the oldest API server (1.%d)", n.Name, n.KubernetesVersion, oldestAPI)
		case target-m > 3:
			return fmt.Errorf("%s's kubelet at %s would be %d minors older than the API servers at %s (at most 3)",
				n.Name, n.KubernetesVersion, target-m, f.passes[0].To)
		}
	}
	return nil
}

// noRemovedAPIs: no API server reported a request in the last day
// (store.DeprecatedAPIsWithin of the judgment) to an API a release of
// the chain removes. The detail names each API, its removal, its node and
// when the node last reported it, so the operator knows what to migrate
// and when the gate lets go of it.
func noRemovedAPIs(f facts) error {
	final := minorOf(f.passes[len(f.passes)-1].To)
	since := f.now.Add(-store.DeprecatedAPIsWithin)
	var hits []string
	for _, n := range live(f.nodes) {
		for _, api := range n.DeprecatedAPIs {
			if r := minorOf(api.RemovedRelease); r >= 0 && r <= final && api.LastSeen.After(since) {
				hits = append(hits, fmt.Sprintf("%s (removed in %s, served by %s, last reported %s)",
					apiName(api), api.RemovedRelease, n.Name, api.LastSeen.UTC().Format(time.RFC3339)))
			}
		}
	}
	if len(hits) > 0 {
		return fmt.Errorf("requested in the last day: %s", strings.Join(hits, "; "))
	}
	return nil
}

// apiName is the recorded API as an operator reads it (apitypes.DeprecatedAPI.Name).
func apiName(a store.DeprecatedAPI) string {
	return apitypes.DeprecatedAPI{Group: a.Group, Version: a.Version, Resource: a.Resource, Subresource: a.Subresource}.Name()
}

// judged is every gate of the table as f stands, then the snapshot's.
func judged(f facts) []apitypes.UpgradeGate {
	out := make([]apitypes.UpgradeGate, 0, len(gates)+1)
	for _, g := range gates {
		v := apitypes.UpgradeGate{Name: g.name, Passed: true, Detail: "passed"}
		if err := g.judge(f); err != nil {
			v.Passed, v.Detail = false, err.Error()
			v.Overridden = g.overrides && f.override
		}
		out = append(out, v)
	}
	return append(out, snapshotGate)
}

// refusal is the first gate of judged that failed and was not overridden,
// as its code; nil when the upgrade may begin.
func refusal(judged []apitypes.UpgradeGate) error {
	for i, g := range gates {
		if v := judged[i]; !v.Passed && !v.Overridden {
			return g.code.Detailf("gate %s: %s; nothing was changed", g.name, v.Detail)
		}
	}
	return nil
}
