package apitypes

import "time"

// UpgradeRequest is the body of POST /clusters/{id}/upgrade.
type UpgradeRequest struct {
	// KubernetesVersion is the target: a release of GET
	// /kubernetes-versions reachable by the table's upgrade paths.
	KubernetesVersion string `json:"kubernetes_version"`
	// Surge is how many new workers of a pool are made before as many old
	// ones are drained and removed (default 1).
	Surge *int `json:"surge,omitempty"`
	// DrainTimeoutSeconds bounds each old worker's drain (default 300).
	DrainTimeoutSeconds *int `json:"drain_timeout_seconds,omitempty"`
	// DryRun answers the plan and its gates and records nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// AllowDeprecatedAPIs overrides the one gate an operator may: requests
	// to an API the target removes. The override is recorded.
	AllowDeprecatedAPIs bool `json:"allow_deprecated_apis,omitempty"`
}

// UpgradeAction is the body of POST /clusters/{id}/upgrade/resume and
// /upgrade/abort: none (a reserved object, so a later field is no break).
type UpgradeAction struct{}

// UpgradePlan is what an upgrade will do: its passes (one minor each),
// its gates as they stand now, and the order in which its nodes move.
type UpgradePlan struct {
	ClusterID           int64         `json:"cluster_id"`
	From                string        `json:"from_version"`
	To                  string        `json:"to_version"`
	Passes              []UpgradePass `json:"passes"`
	Gates               []UpgradeGate `json:"gates"`
	ControlPlane        []PlannedNode `json:"control_plane"`
	Pools               []PlannedPool `json:"node_pools"`
	Surge               int           `json:"surge"`
	DrainTimeoutSeconds int           `json:"drain_timeout_seconds"`
}

// UpgradePass is one step of a chain: every node moves From → To.
type UpgradePass struct {
	From string `json:"from_version"`
	To   string `json:"to_version"`
}

// UpgradeGate is one preflight gate: passed or why not. Overridden: the
// operator allowed it to fail (deprecated_apis only). Pending: judged
// while the upgrade runs (the snapshot, taken before the first node moves).
type UpgradeGate struct {
	Name       string `json:"name"`
	Passed     bool   `json:"passed"`
	Overridden bool   `json:"overridden,omitempty"`
	Pending    bool   `json:"pending,omitempty"`
	Detail     string `json:"detail"`
}

// PlannedNode is a node an upgrade moves, in its order.
type PlannedNode struct {
	Name string `json:"name"`
	VMID int64  `json:"vm_id"`
	From string `json:"from_version"`
}

// PlannedPool is a pool an upgrade moves by surge, in its order.
type PlannedPool struct {
	Name  string        `json:"name"`
	Nodes []PlannedNode `json:"nodes"`
}

// Upgrade is a cluster's upgrade as recorded: where it stands, and why
// it paused (the gate, the node) when it did.
type Upgrade struct {
	ID                       int64     `json:"upgrade_id"`
	ClusterID                int64     `json:"cluster_id"`
	From                     string    `json:"from_version"`
	To                       string    `json:"to_version"`
	PassTo                   string    `json:"pass_version"`
	State                    string    `json:"state"`
	StateReason              string    `json:"state_reason,omitempty"`
	PausedNode               string    `json:"paused_node,omitempty"`
	Surge                    int       `json:"surge"`
	DrainTimeoutSeconds      int       `json:"drain_timeout_seconds"`
	DeprecatedAPIsOverridden bool      `json:"deprecated_apis_overridden"`
	SnapshotID               *int64    `json:"snapshot_id,omitempty"`
	CreatedAt                time.Time `json:"created_at"`
	UpdatedAt                time.Time `json:"updated_at"`
}

// UpgradeAnswer is POST /clusters/{id}/upgrade's answer: the plan, and
// the upgrade it recorded (nil for a dry run).
type UpgradeAnswer struct {
	Plan    UpgradePlan `json:"plan"`
	Upgrade *Upgrade    `json:"upgrade"`
}
