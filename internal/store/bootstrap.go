package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Fetch outcomes, as bootstrap_fetches.outcome holds them: a bundle fetch
// served or refused for a closed bootstrap, a renewal answered or refused.
const (
	FetchServed    = "served"
	FetchClosed    = "bootstrap_closed"
	RenewalServed  = "renewed"
	RenewalRefused = "renewal_refused"
)

// Fetch is one recorded bundle fetch of a node (a bootstrap_fetches row).
type Fetch struct {
	VMID      int64
	RequestID string
	Outcome   string
	FetchedAt time.Time
}

// NodeRef names one node as an operator does: its org, cluster and VM.
type NodeRef struct {
	OrgID, ClusterID, VMID int64
}

// NodeBootstrap is one node's bootstrap as its operator sees it.
type NodeBootstrap struct {
	ClusterStatus     string
	NodeName          string
	Phase, Message    string
	UpdatedAt         time.Time
	BootstrapOpenedAt time.Time
	ReadyAt           *time.Time // the node's first ready in this bootstrap
	Fetches           []Fetch    // newest first
}

// MaxFetchesShown bounds the fetches NodeBootstrap returns (the newest).
const MaxFetchesShown = 100

// nodeOfOrg is the CTE "node": one node of a live cluster of org ($1),
// cluster id $2, vm $3. Statements add what they read or change after it.
const nodeOfOrg = `
	WITH node AS (
		SELECT n.id, n.node_name, n.phase, n.message, n.updated_at, n.bootstrap_opened_at, n.ready_at, k.status
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
		WHERE k.org_id = $1 AND k.id = $2 AND n.vm_id = $3 AND k.status <> 'deleted'
	)`

// NodeBootstrap loads one node of org's cluster with its newest fetches.
// ErrNotFound: no such node in a live cluster of that org.
func (s *Store) NodeBootstrap(ctx context.Context, ref NodeRef) (NodeBootstrap, error) {
	var b NodeBootstrap
	var nodeID int64
	err := s.pool.QueryRow(ctx, nodeOfOrg+`
		SELECT id, status, node_name, phase, message, updated_at, bootstrap_opened_at, ready_at FROM node`,
		ref.OrgID, ref.ClusterID, ref.VMID).Scan(&nodeID, &b.ClusterStatus, &b.NodeName, &b.Phase, &b.Message,
		&b.UpdatedAt, &b.BootstrapOpenedAt, &b.ReadyAt)
	if err != nil {
		return b, fmt.Errorf("loading the bootstrap of vm %d: %w", ref.VMID, notFound(err))
	}
	b.Fetches, err = s.fetches(ctx, nodeID)
	return b, err
}

func (s *Store) fetches(ctx context.Context, nodeID int64) ([]Fetch, error) {
	rows, _ := s.pool.Query(ctx, `SELECT vm_id, request_id, outcome, fetched_at FROM bootstrap_fetches
		WHERE node_id = $1 ORDER BY fetched_at DESC, id DESC LIMIT $2`, nodeID, MaxFetchesShown)
	fs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Fetch])
	if err != nil {
		return nil, fmt.Errorf("loading fetches of node %d: %w", nodeID, err)
	}
	return fs, nil
}

// ReopenOutcome is what ReopenBootstrap found: the cluster's status and
// whether the node's bootstrap was re-opened.
type ReopenOutcome struct {
	ClusterStatus string
	Reopened      bool
}

// ReopenBootstrap starts a node's bootstrap over in one statement, only if
// its cluster is active: phase pending, no message, not ready, its window
// opened at `at`, no phase times. ErrNotFound: no such node in a live cluster of that org.
func (s *Store) ReopenBootstrap(ctx context.Context, ref NodeRef, pending string, at time.Time) (ReopenOutcome, error) {
	var out ReopenOutcome
	err := s.pool.QueryRow(ctx, nodeOfOrg+`, reopened AS (
			UPDATE kube_nodes n SET phase = $4, message = '', updated_at = now(), bootstrap_opened_at = $5,
				ready_at = NULL, phase_times = '{}'
			FROM node WHERE n.id = node.id AND node.status = 'active'
			RETURNING n.id
		)
		SELECT node.status, EXISTS (SELECT 1 FROM reopened) FROM node`,
		ref.OrgID, ref.ClusterID, ref.VMID, pending, at).Scan(&out.ClusterStatus, &out.Reopened)
	if err != nil {
		return out, fmt.Errorf("re-opening the bootstrap of vm %d: %w", ref.VMID, notFound(err))
	}
	return out, nil
}
