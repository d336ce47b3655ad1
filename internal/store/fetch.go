package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// FetchWrites are what one bundle fetch writes once it is rendered (or
// refused), all in one round trip (one batch, which PostgreSQL runs as one
// implicit transaction: all of them or none).
type FetchWrites struct {
	Fetch Fetch
	// Window, on the window's first fetch: the identities it issued.
	Window *WindowIdentities
	// Phase, for a pending node: its move to bundle_fetched.
	Phase *PhaseChange
}

// FetchWritten is what RecordFetch found.
type FetchWritten struct {
	// WindowStored: every identity of Window was written (false: the
	// window moved on, or a racing fetch stored its own first; read them
	// again).
	WindowStored bool
	// Phase is the outcome of Phase, when asked.
	Phase PhaseOutcome
}

// WindowIdentities asks to store the identities issued on a node's first
// fetch of the bootstrap window that opened at OpenedAt.
type WindowIdentities struct {
	VMID     int64
	OpenedAt time.Time
	Issued   []Identity
}

// RecordFetch writes w. ErrNotFound: the fetch's VM is no node.
func (s *Store) RecordFetch(ctx context.Context, w FetchWrites) (FetchWritten, error) {
	var out FetchWritten
	var recorded int64
	b := &pgx.Batch{}
	if w.Window != nil {
		queueWindow(b, *w.Window, &out.WindowStored)
	}
	f := w.Fetch
	b.Queue(recordFetch, f.VMID, f.RequestID, f.Outcome, f.FetchedAt).Exec(func(tag pgconn.CommandTag) error {
		recorded = tag.RowsAffected()
		return nil
	})
	if w.Phase != nil {
		b.Queue(advancePhase, w.Phase.args()...).QueryRow(func(row pgx.Row) error {
			if err := scanPhaseOutcome(row, &out.Phase); err != nil {
				return w.Phase.failed(err)
			}
			return nil
		})
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if err == nil && recorded == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return out, fmt.Errorf("recording the bundle fetch of vm %d: %w", f.VMID, err)
	}
	return out, nil
}

const recordFetch = `
	INSERT INTO bootstrap_fetches (node_id, vm_id, request_id, outcome, fetched_at)
	SELECT id, vm_id, $2, $3, $4 FROM kube_nodes WHERE vm_id = $1`

// storeWindow stores a window's identities only while the node's window is
// still the one they were issued for. They replace the same names issued
// for an earlier window, never those of this one nor those issued at
// founding: of two first fetches racing, the first to commit wins. Both
// record their serials: each was issued.
const storeWindow = `
	WITH node AS (
		SELECT id, kube_cluster_id FROM kube_nodes WHERE vm_id = $1 AND bootstrap_opened_at = $2
	), issued AS (
		` + recordIssued + ` SELECT node.kube_cluster_id, node.id, u.name, u.serial
		FROM node, unnest($3::text[], $8::text[]) AS u (name, serial)
		ON CONFLICT DO NOTHING
	)
	INSERT INTO node_identities (node_id, name, cert, key_sealed, not_after, window_opened_at, bootstrap_only)
	SELECT node.id, u.name, u.cert, u.key_sealed, u.not_after, $2, u.bootstrap_only
	FROM node, unnest($3::text[], $4::text[], $5::bytea[], $6::timestamptz[], $7::bool[])
		AS u (name, cert, key_sealed, not_after, bootstrap_only)
	ON CONFLICT (node_id, name) DO UPDATE SET cert = excluded.cert, key_sealed = excluded.key_sealed,
		not_after = excluded.not_after, window_opened_at = excluded.window_opened_at,
		bootstrap_only = excluded.bootstrap_only
	WHERE node_identities.window_opened_at IS NOT NULL
	  AND node_identities.window_opened_at <> excluded.window_opened_at`

// retireUnissued marks the node's identities of an earlier window that
// this window issued none of ($3: the names it issued), while the window
// is still the one they were issued for: an identity the cert table
// retired since (kube-proxy's). The node's new bundle holds none, so
// nothing renews it, and it must not count in the cluster's expiry: that
// is what bootstrap_only says of a row (never renewed nor counted). The
// row is kept, not deleted: this role deletes nothing.
const retireUnissued = `
	UPDATE node_identities i SET bootstrap_only = true FROM kube_nodes n
	WHERE i.node_id = n.id AND n.vm_id = $1 AND n.bootstrap_opened_at = $2
	  AND i.window_opened_at IS NOT NULL AND i.window_opened_at <> $2
	  AND i.name <> ALL($3::text[])`

// queueWindow queues w's store; *stored says whether every identity was
// written.
func queueWindow(b *pgx.Batch, w WindowIdentities, stored *bool) {
	a := identityColumns(w.Issued)
	b.Queue(storeWindow, w.VMID, w.OpenedAt, a.names, a.certs, a.keys, a.notAfters, a.only, a.serials).Exec(func(tag pgconn.CommandTag) error {
		*stored = tag.RowsAffected() == int64(len(w.Issued))
		return nil
	})
	b.Queue(retireUnissued, w.VMID, w.OpenedAt, a.names)
}
