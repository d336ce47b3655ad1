package clusterfacts

import (
	"fmt"
	"slices"
)

// Phase is where a node's bootstrap stands.
type Phase string

// The phases; phaseTable orders them.
const (
	Pending                Phase = "pending"
	BundleFetched          Phase = "bundle_fetched"
	PrerequisitesInstalled Phase = "prerequisites_installed"
	CertificatesSigned     Phase = "certificates_signed"
	EtcdStarted            Phase = "etcd_started"
	KubeletStarted         Phase = "kubelet_started"
	APIServerReady         Phase = "apiserver_ready"
	AddonsInstalled        Phase = "addons_installed"
	Ready                  Phase = "ready"
	Failed                 Phase = "failed"
)

// recorder says who records a phase.
type recorder int

const (
	byK8sapi recorder = iota // k8sapi itself; a VM may not report it
	byVM                     // the VM's shim and scripts report it
)

// Role is which kind of node a phase is passed by.
type Role int

// The roles: a control-plane node (etcd, the API server) and a pool's
// worker.
const (
	ControlPlane Role = 1 << iota
	Worker
)

const bothRoles = ControlPlane | Worker

// phaseSpec is one row of the phase table.
type phaseSpec struct {
	phase Phase
	by    recorder
	roles Role // the roles that pass it
	// initialOnly phases belong to the cluster's initial node (the one that
	// installs the addons): the others' reports of them are refused.
	initialOnly bool
	means       string
}

// phaseTable is the one list of phases, in the order a node passes them.
// A report may skip phases forward (a node that is not the initial one has
// no addons; a lost report must not stall the next). failed, last, is
// outside the order: it may be entered from any phase, and only a re-open
// of the node's bootstrap (progress.Nodes.Reopen) leaves it: a re-open moves a node
// in any phase back to pending, and its phases start over.
var phaseTable = []phaseSpec{
	{Pending, byK8sapi, bothRoles, false, "founded; the VM has not fetched its bundle yet"},
	{BundleFetched, byK8sapi, bothRoles, false, "the VM fetched its bundle (recorded by k8sapi on the first successful fetch)"},
	{PrerequisitesInstalled, byVM, ControlPlane, false, "packages, kernel settings, containerd and the verified binaries are installed"},
	{CertificatesSigned, byK8sapi, Worker, false, "k8sapi signed the worker's requests for its own keys (recorded by k8sapi as it signs)"},
	{EtcdStarted, byVM, ControlPlane, false, "the etcd member's unit is started (it joins once its peers start)"},
	{KubeletStarted, byVM, bothRoles, false, "the kubelet is started (on a control-plane node it runs the static pods)"},
	{APIServerReady, byVM, ControlPlane, false, "the node's own API server answers /readyz"},
	{AddonsInstalled, byVM, ControlPlane, true, "kube-proxy, Cilium and CoreDNS are installed (initial node only)"},
	{Ready, byVM, bothRoles, false, "the node finished its bootstrap (a worker: its Node is Ready)"},
	{Failed, byVM, bothRoles, false, "a step failed; the message names the step and the tail of its output"},
}

// Phases returns every phase, in order, failed last.
func Phases() []Phase {
	out := make([]Phase, len(phaseTable))
	for i, s := range phaseTable {
		out[i] = s.phase
	}
	return out
}

// Meaning returns what a phase says about the node ("" for an unknown one).
func Meaning(p Phase) string {
	if i := rank(p); i >= 0 {
		return phaseTable[i].means
	}
	return ""
}

// ParsePhase reads a phase's stored or reported spelling.
func ParsePhase(s string) (Phase, error) {
	if rank(Phase(s)) < 0 {
		return "", fmt.Errorf("%q is no bootstrap phase", s)
	}
	return Phase(s), nil
}

// After reports whether a node in p has passed q in the table's order.
func (p Phase) After(q Phase) bool { return rank(p) > rank(q) }

// rank is p's place in the table, -1 if p is no phase.
func rank(p Phase) int {
	return slices.IndexFunc(phaseTable, func(s phaseSpec) bool { return s.phase == p })
}

// ReportedByVM reports whether p is a phase the VM reports (k8sapi records
// the others itself).
func ReportedByVM(p Phase) bool {
	i := rank(p)
	return i >= 0 && phaseTable[i].by == byVM
}

// Reportable lists the phases a VM of any role may report, in order.
func Reportable() []Phase { return ReportableBy(bothRoles) }

// ReportableBy lists the phases a VM of one of roles may report, in order.
func ReportableBy(roles Role) []Phase {
	var out []Phase
	for _, s := range phaseTable {
		if s.by == byVM && s.roles&roles != 0 {
			out = append(out, s.phase)
		}
	}
	return out
}

// PassedBy reports whether a node of role passes p.
func PassedBy(p Phase, role Role) bool {
	i := rank(p)
	return i >= 0 && phaseTable[i].roles&role != 0
}

// InitialOnly reports whether only the cluster's initial node may report p.
func InitialOnly(p Phase) bool {
	i := rank(p)
	return i >= 0 && phaseTable[i].initialOnly
}

// EnterableFrom lists the phases a node may be in for a report of to to
// move it: for failed every phase but failed; for any other phase, the
// phases up to and including to (a repeated report refreshes the message).
// The store guards its UPDATE with this list, so the rule holds however
// reports race.
func EnterableFrom(to Phase) []string {
	var out []string
	for _, s := range phaseTable {
		if s.phase == Failed {
			continue
		}
		if to == Failed || rank(s.phase) <= rank(to) {
			out = append(out, string(s.phase))
		}
	}
	return out
}

// Next is the phase a node of role in p works toward: the table's next
// phase that the node passes (addons only on the initial node). None once
// the node is ready or failed.
func Next(p Phase, role Role, initial bool) (Phase, bool) {
	if p == Failed {
		return "", false
	}
	for _, s := range phaseTable[rank(p)+1:] {
		if s.phase != Failed && s.roles&role != 0 && (initial || !s.initialOnly) {
			return s.phase, true
		}
	}
	return "", false
}
