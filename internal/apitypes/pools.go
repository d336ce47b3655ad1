package apitypes

import "time"

// NodePool is a cluster's worker pool as the API shows it, with its
// workers.
type NodePool struct {
	Name         string            `json:"name"`
	Count        int               `json:"count"`
	InstanceType string            `json:"instance_type"`
	ImageID      int64             `json:"image_id"`
	SubnetID     int64             `json:"subnet_id"`
	Labels       map[string]string `json:"labels"`
	Taints       []Taint           `json:"taints"`
	State        string            `json:"state"`
	StateReason  string            `json:"state_reason,omitempty"` // Conditions' message, for older clients
	// Conditions are Ready (the pool active) and Progressing (its create,
	// scale or delete runs).
	Conditions []Condition  `json:"conditions"`
	Nodes      []WorkerView `json:"nodes"`
	CreatedAt  time.Time    `json:"created_at"`
	UpdatedAt  time.Time    `json:"updated_at"`
}

// NodePoolList is GET /clusters/{id}/node-pools.
type NodePoolList struct {
	NodePools []NodePool `json:"node_pools"`
}

// Taint is one taint a pool's workers carry: in a pool, in the request
// that creates one and in a worker's bundle.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}
