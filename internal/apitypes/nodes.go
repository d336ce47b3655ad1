package apitypes

import "time"

// NodeView is one node's VM as the API shows it: a control-plane node of
// a cluster, or a pool's worker (WorkerView).
type NodeView struct {
	VMID       int64  `json:"vm_id"`
	Ordinal    int    `json:"ordinal"`
	Name       string `json:"name"`
	IPv4       string `json:"ipv4"`
	IPv6       string `json:"ipv6,omitempty"`
	PublicIPv4 string `json:"public_ipv4,omitempty"`
	// KubernetesVersion is the version the node's bundle is rendered for:
	// its cluster's, or during an upgrade the old or the new one.
	KubernetesVersion string `json:"kubernetes_version"`
	// Retiring: the node is being replaced (its VM is deleted once the
	// node replacing it is ready).
	Retiring bool `json:"retiring,omitempty"`
	// Health is the node's as its reports say (docs/NODE-HEALTH.md):
	// healthy, unhealthy (UnhealthySince says since when) or unknown (it
	// has not reported yet). The reads show it (GET /clusters, /clusters/{id}
	// and the node pools'); an operation's answer leaves it out.
	NodeHealth
}

// The node health states.
const (
	Healthy       = "healthy"
	Unhealthy     = "unhealthy"
	HealthUnknown = "unknown"
)

// NodeHealth is a node's health: its state, since when it is unhealthy
// and why, its last report's time and checks.
type NodeHealth struct {
	Health           string                 `json:"health,omitempty"`
	UnhealthySince   *time.Time             `json:"unhealthy_since,omitempty"`
	UnhealthyReason  string                 `json:"unhealthy_reason,omitempty"`
	HealthReportedAt *time.Time             `json:"health_reported_at,omitempty"`
	HealthChecks     map[string]HealthCheck `json:"health_checks,omitempty"`
	// DeprecatedAPIs are the deprecated APIs a control-plane node reported
	// requested of its API server in the last day, each with when it last
	// did: what the upgrade gate deprecated_apis judges.
	DeprecatedAPIs []RequestedAPI `json:"deprecated_apis,omitempty"`
}

// RequestedAPI is a deprecated API as recorded: when its node last
// reported it requested.
type RequestedAPI struct {
	DeprecatedAPI
	LastSeen time.Time `json:"last_seen"`
}

// HealthCheck is one check of a node's health report: whether it passed,
// and what the node saw.
type HealthCheck struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// DeprecatedAPI is one deprecated API a control-plane node's API server
// says was requested of it (its apiserver_requested_deprecated_apis
// series at 1), as the node's health report names it: its group ("" for
// the core group), version, resource and subresource, and the release
// that removes it ("1.36"; "" when none is planned).
type DeprecatedAPI struct {
	Group          string `json:"group"`
	Version        string `json:"version"`
	Resource       string `json:"resource"`
	Subresource    string `json:"subresource,omitempty"`
	RemovedRelease string `json:"removed_release"`
}

// Name is the API as an operator reads it: "flowschemas
// flowcontrol.apiserver.k8s.io/v1beta3", "deployments/scale apps/v1beta1",
// "componentstatuses v1" of the core group.
func (a DeprecatedAPI) Name() string {
	resource, gv := a.Resource, a.Version
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Group != "" {
		gv = a.Group + "/" + gv
	}
	return resource + " " + gv
}

// The bounds of a health report's deprecated APIs, one place for both
// sides: k8sapi refuses a report beyond them (nodehealth), and the health
// script leaves out what they would refuse (bundle), so a node never
// loses its report to them. At most MaxDeprecatedAPIs; a group at most a
// DNS subdomain's length, every other name a DNS label's, each of
// DeprecatedNamePattern; a removal release RemovedReleasePattern.
const (
	MaxDeprecatedAPIs     = 64
	MaxDeprecatedGroupLen = 253
	MaxDeprecatedNameLen  = 63
	DeprecatedNamePattern = `^[a-zA-Z0-9.-]*$`
	RemovedReleasePattern = `^([0-9]{1,3}\.[0-9]{1,3})?$`
)

// WorkerView is one worker whose VM exists: its bootstrap phase, and
// whether it is being removed. Its Retiring is always shown (it shadows
// NodeView's, which a control-plane node omits when false).
type WorkerView struct {
	NodeView
	Phase    string `json:"phase"`
	Retiring bool   `json:"retiring"`
}

// NodeReplacement is a control-plane node's replacement as
// POST /clusters/{id}/nodes/{vm_id}/replace answers it: the node
// replaced, the node replacing it and how far it is.
type NodeReplacement struct {
	ID          int64  `json:"replacement_id"`
	ClusterID   int64  `json:"cluster_id"`
	OldVMID     int64  `json:"old_vm_id"`
	OldNodeName string `json:"old_node_name"`
	NewNodeName string `json:"new_node_name"`
	State       string `json:"state"`
	StateReason string `json:"state_reason,omitempty"` // Conditions' message, for older clients
	// Conditions are Ready (the replacement done) and Progressing (it
	// runs, or is being turned back).
	Conditions []Condition `json:"conditions"`
	CreatedAt  time.Time   `json:"created_at"`
}

// ControlPlaneScaling is a scaling of a cluster's control plane as PATCH
// /clusters/{id} answers it: from which count to which and how far it is
// (scaling, done or failed).
type ControlPlaneScaling struct {
	ID          int64     `json:"scaling_id"`
	ClusterID   int64     `json:"cluster_id"`
	FromCount   int       `json:"from_count"`
	ToCount     int       `json:"to_count"`
	State       string    `json:"state"`
	StateReason string    `json:"state_reason,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}
