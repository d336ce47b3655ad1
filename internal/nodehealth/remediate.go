package nodehealth

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/store"
)

// Decision is what the remediation of one unhealthy node decided: Take,
// replace it now; otherwise Reason says why not. Why says why it is
// unhealthy.
type Decision struct {
	Node   store.Node
	Take   bool
	Reason string
	Why    string
}

// Situation is a cluster as one remediation pass sees it: its settings
// (the row), its nodes and pools, its live operations (the table of
// operations' rows not ended, store.ClusterOperations) and the time.
type Situation struct {
	Cluster store.Cluster
	Nodes   []store.Node
	Pools   []store.Pool
	Running []string
	Now     time.Time
}

// Decide is the remediation of a cluster's unhealthy nodes, as Cluster
// API's MachineHealthCheck and KubeadmControlPlane remediate: every live
// node unhealthy for longer than the cluster's unhealthy_after (0: off,
// no decision) is a candidate, control-plane nodes first, then the longest
// unhealthy. At most one is taken (one at a time), and none while another
// operation runs on the cluster; a control-plane node only while the other
// members, healthy, keep etcd's quorum without it; a worker only while at
// most max_unhealthy_percent of its pool is unhealthy. Every other
// candidate is refused, with its reason.
func Decide(s Situation) []Decision {
	after := time.Duration(s.Cluster.UnhealthyAfterSeconds) * time.Second
	if after <= 0 {
		return nil
	}
	var out []Decision
	taken := ""
	for _, c := range s.candidates(after) {
		d := Decision{Node: c.node, Why: c.judgment.Reason}
		switch {
		case len(s.Running) > 0:
			d.Reason = "another operation runs on the cluster: " + strings.Join(s.Running, "; ")
		case taken != "":
			d.Reason = "one node is remediated at a time: " + taken + " is replaced first"
		default:
			d.Reason = s.refusal(c.node)
		}
		if d.Take = d.Reason == ""; d.Take {
			taken = c.node.Name
		}
		out = append(out, d)
	}
	return out
}

// candidate is a node unhealthy for longer than unhealthy_after.
type candidate struct {
	node     store.Node
	judgment Judgment
}

// candidates are the live nodes unhealthy for longer than after, control
// plane first, then the longest unhealthy.
func (s Situation) candidates(after time.Duration) []candidate {
	var out []candidate
	for _, n := range live(s.Nodes) {
		if j := Judge(n, s.Now); j.unhealthyFor(after, s.Now) {
			out = append(out, candidate{node: n, judgment: j})
		}
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(roleOrder(a.node), roleOrder(b.node)), a.judgment.Since.Compare(b.judgment.Since))
	})
	return out
}

func roleOrder(n store.Node) int {
	if n.Role == store.RoleControlPlane {
		return 0
	}
	return 1
}

// live are the nodes remediation judges: their VM exists, they reported
// ready once, and nothing is removing them already.
func live(nodes []store.Node) []store.Node {
	var out []store.Node
	for _, n := range nodes {
		if n.VMID != 0 && n.ReadyAt != nil && !n.Retiring {
			out = append(out, n)
		}
	}
	return out
}

// refusal is why n may not be replaced now ("": it may).
func (s Situation) refusal(n store.Node) string {
	if n.Role == store.RoleControlPlane {
		return s.quorumRefusal(n)
	}
	return s.poolRefusal(n)
}

// quorumRefusal: replacing n takes its member out of etcd while the new
// one joins as a learner, so the other members, healthy, must be a
// majority of them (KubeadmControlPlane's rule).
func (s Situation) quorumRefusal(n store.Node) string {
	var others []store.Node
	for _, m := range s.Nodes {
		if m.Role == store.RoleControlPlane && m.ID != n.ID && !m.Retiring && m.VMID != 0 {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		return fmt.Sprintf("quorum at risk: %s is the cluster's only control-plane node, so etcd would have no member left; "+
			"restore a snapshot into a new cluster instead (docs/RESTORE.md)", n.Name)
	}
	healthy := s.healthyAmong(others)
	if need := len(others)/2 + 1; healthy < need {
		return fmt.Sprintf("quorum at risk: %d of the %d other control-plane nodes are healthy; replacing %s needs %d of them (a majority)",
			healthy, len(others), n.Name, need)
	}
	return ""
}

func (s Situation) healthyAmong(nodes []store.Node) int {
	healthy := 0
	for _, m := range nodes {
		if m.ReadyAt != nil && Judge(m, s.Now).State == apitypes.Healthy {
			healthy++
		}
	}
	return healthy
}

// poolRefusal: a worker is replaced only while at most the cluster's
// max_unhealthy_percent of its pool's workers are unhealthy (whatever
// took out more is not the workers' fault: replacing them would make a
// storm).
func (s Situation) poolRefusal(n store.Node) string {
	var workers []store.Node
	for _, m := range s.Nodes {
		if m.PoolID == n.PoolID && !m.Retiring && m.VMID != 0 {
			workers = append(workers, m)
		}
	}
	unhealthy := 0
	for _, m := range workers {
		if Judge(m, s.Now).State == apitypes.Unhealthy {
			unhealthy++
		}
	}
	if limit := s.Cluster.MaxUnhealthyPercent; unhealthy*100 > limit*len(workers) {
		return fmt.Sprintf("too many unhealthy: %d of the %d workers of node pool %s are unhealthy, more than max_unhealthy_percent (%d%%)",
			unhealthy, len(workers), s.poolName(n.PoolID), limit)
	}
	return ""
}

func (s Situation) poolName(id int64) string {
	for _, p := range s.Pools {
		if p.ID == id {
			return p.Name
		}
	}
	return fmt.Sprintf("%d", id)
}
