package apitypes

import "time"

// RotateCARequest is the body of POST /clusters/{id}/rotate-ca: the roots
// to rotate (cluster, etcd, front-proxy, service-account); none is all.
type RotateCARequest struct {
	Roots []string `json:"roots,omitempty"`
}

// CARotation is a cluster's CA rotation: its phase (trusting, signing,
// distrusting, done; untrusting, aborted after an abort), its operation's
// state and typed reason (NodeNotReported, WaitingForTokens while it
// holds), and the phase each node last applied.
type CARotation struct {
	ID        int64    `json:"rotation_id"`
	ClusterID int64    `json:"cluster_id"`
	Roots     []string `json:"roots"`
	Phase     string   `json:"phase"`
	State     string   `json:"state"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message,omitempty"`
	// DistrustWaitSeconds is how long after signing began the old roots
	// stay trusted: the longest lifetime of an admin kubeconfig or
	// service-account token signed before. DistrustAfter is when that
	// ends (null before signing began).
	DistrustWaitSeconds int                  `json:"distrust_wait_seconds"`
	SigningBeganAt      *time.Time           `json:"signing_began_at"`
	DistrustAfter       *time.Time           `json:"distrust_after"`
	Nodes               []CARotationNodeView `json:"nodes"`
	CreatedAt           time.Time            `json:"created_at"`
	EndedAt             *time.Time           `json:"ended_at"`
}

// CARotationNodeView is the phase of a rotation one node last applied
// (its renewal under it); "" when it applied none yet.
type CARotationNodeView struct {
	Name         string     `json:"name"`
	Role         string     `json:"role"`
	AppliedPhase string     `json:"applied_phase"`
	AppliedAt    *time.Time `json:"applied_at"`
}

// CARootView is one root of trust of a cluster and its generations,
// oldest first.
type CARootView struct {
	Root        string             `json:"root"`
	Generations []CAGenerationView `json:"generations"`
}

// CAGenerationView is one generation of a root: next (trusted, signs
// nothing yet), current (signs), previous, retired (trusted by nothing,
// its key overwritten); not_after is null for the service-account signer.
type CAGenerationView struct {
	Generation int        `json:"generation"`
	State      string     `json:"state"`
	NotAfter   *time.Time `json:"not_after"`
}
