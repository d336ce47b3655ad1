package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AddonsAsk is what the addons route reads of a control-plane VM: the
// live upgrade of its cluster whose addons step chose the VM's node
// (migration 039), and where that step stands.
type AddonsAsk struct {
	UpgradeID   int64
	ClusterID   int64
	Node        string
	PassVersion string
	// Applied: the node reported the pass's addons applied; Failure: it
	// reported it could not (the step pauses the upgrade on it).
	Applied bool
	Failure string
}

// Due says whether the chosen node is to apply the pass's addons now.
func (a AddonsAsk) Due() bool { return !a.Applied && a.Failure == "" }

// AddonsAskOf is the addons step that chose org's control-plane node whose
// VM is vmID, in one query: ErrNotFound for every other VM (no upgrade
// runs, its step is elsewhere, or another node was chosen).
func (s *Store) AddonsAskOf(ctx context.Context, vmID, orgID int64) (AddonsAsk, error) {
	rows, _ := s.pool.Query(ctx, `SELECT u.id, u.kube_cluster_id, n.node_name, u.pass_version,
			u.addons_version = u.pass_version, u.addons_failure
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
		JOIN cluster_upgrades u ON u.kube_cluster_id = n.kube_cluster_id
		WHERE n.vm_id = $1 AND n.role = '`+RoleControlPlane+`' AND k.org_id = $2 AND k.status = 'active'
		  AND u.state = '`+UpgradeUpgrading+`' AND u.addons_node = n.node_name`, vmID, orgID)
	a, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (AddonsAsk, error) {
		var a AddonsAsk
		return a, r.Scan(&a.UpgradeID, &a.ClusterID, &a.Node, &a.PassVersion, &a.Applied, &a.Failure)
	})
	if err != nil {
		return a, fmt.Errorf("reading vm %d's addons step: %w", vmID, notFound(err))
	}
	return a, nil
}

// RecordAddonsReport records the chosen node's report of a's step: the
// pass's addons applied (failure "") or why not. A repeated success keeps
// the first; a report once the step moved on (another pass, another node,
// a pause) is ErrNotFound.
func (s *Store) RecordAddonsReport(ctx context.Context, a AddonsAsk, failure string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE cluster_upgrades u SET
			addons_version = CASE WHEN $5 = '' THEN u.pass_version ELSE u.addons_version END,
			addons_failure = $5, addons_reported_at = now(), updated_at = now()
		WHERE u.id = $1 AND u.kube_cluster_id = $2 AND u.state = '`+UpgradeUpgrading+`'
		  AND u.addons_node = $3 AND u.pass_version = $4 AND (u.addons_version <> u.pass_version OR $5 = '')`,
		a.UpgradeID, a.ClusterID, a.Node, a.PassVersion, failure)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("recording the addons report of %s: %w", a.Node, err)
	}
	return nil
}
