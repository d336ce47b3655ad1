package store

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/vmlimit"
	"github.com/jackc/pgx/v5"
)

// PrincipalToken is a row of the platform's principal token table.
type PrincipalToken struct {
	OrgID int64
	// VMID is the VM the platform issued the token to (through IMDS); nil
	// for an operator's token.
	VMID      *int64
	Scope     string
	ExpiresAt time.Time
	RevokedAt *time.Time
}

// IMDSToken is a row of the platform's IMDS session token table.
type IMDSToken struct {
	VMID, OrgID int64
	ExpiryAt    time.Time
}

// PrincipalTokenByHash looks a bearer token up by its hex SHA-256.
func (s *Store) PrincipalTokenByHash(ctx context.Context, hash string) (PrincipalToken, error) {
	var t PrincipalToken
	if err := scanPrincipal(s.pool.QueryRow(ctx, principalByHash, hash), &t); err != nil {
		return t, fmt.Errorf("looking up principal token: %w", notFound(err))
	}
	return t, nil
}

const principalByHash = `SELECT org_id, vm_id, scope, expires_at, revoked_at FROM principal_tokens WHERE hash = $1`

func scanPrincipal(row pgx.Row, t *PrincipalToken) error {
	return row.Scan(&t.OrgID, &t.VMID, &t.Scope, &t.ExpiresAt, &t.RevokedAt)
}

const imdsByHash = `SELECT vm_id, org_id, expiry_at FROM imds_tokens WHERE hash = $1`

func scanIMDS(row pgx.Row, t *IMDSToken) error {
	return row.Scan(&t.VMID, &t.OrgID, &t.ExpiryAt)
}

// VMCall is one call of a VM route as its proofs look it up: the hashes of
// the two tokens it presents and, for a route with a budget, the call to
// count.
type VMCall struct {
	VMID                 int64
	IMDSHash, BearerHash string
	Count                *vmlimit.Count // nil: the route has no budget
}

// VMCallRows are what VMCallLookup found: each token's row or why not
// (ErrNotFound), and the VM's count for the route when the call was
// counted.
type VMCallRows struct {
	IMDS         IMDSToken
	IMDSErr      error
	Principal    PrincipalToken
	PrincipalErr error
	Window       *vmlimit.Window
}

// countVMCall counts a call only when both tokens name the VM of the path:
// a stranger naming another VM's id cannot spend that VM's budget. The
// caller's proofs (internal/auth) are stricter still; this only keeps the
// count from running ahead of them.
const countVMCall = `
	INSERT INTO vm_call_limits AS l (vm_id, route, window_start, calls)
	SELECT $1, $2, $3, 1
	WHERE EXISTS (SELECT 1 FROM imds_tokens WHERE hash = $5 AND vm_id = $1)
	  AND EXISTS (SELECT 1 FROM principal_tokens WHERE hash = $6 AND vm_id = $1)
	ON CONFLICT (vm_id, route) DO UPDATE SET
		calls = CASE WHEN l.window_start <= $3 - $4::bigint * interval '1 microsecond' THEN 1 ELSE l.calls + 1 END,
		window_start = CASE WHEN l.window_start <= $3 - $4::bigint * interval '1 microsecond' THEN $3 ELSE l.window_start END
	RETURNING calls, window_start`

// VMCallLookup looks both tokens up and counts the call, in one round trip
// (one batch): the proofs and the budget of a VM route cost what one
// lookup did.
func (s *Store) VMCallLookup(ctx context.Context, c VMCall) (VMCallRows, error) {
	b := &pgx.Batch{}
	var r VMCallRows
	b.Queue(imdsByHash, c.IMDSHash).QueryRow(func(row pgx.Row) error {
		r.IMDSErr = notFound(scanIMDS(row, &r.IMDS))
		return nil
	})
	b.Queue(principalByHash, c.BearerHash).QueryRow(func(row pgx.Row) error {
		r.PrincipalErr = notFound(scanPrincipal(row, &r.Principal))
		return nil
	})
	if c.Count != nil {
		b.Queue(countAsync)
		queueCount(b, c, &r)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return r, fmt.Errorf("looking up a VM's tokens: %w", err)
	}
	return r, nil
}

// countAsync lets the batch's commit return before its WAL reaches disk:
// the count is the batch's only write (the token lookups only read), and
// all of a batch is one implicit transaction, so the setting ends with it.
// A database crash may lose the last counts of the last moments: a VM gets
// a few more calls of a route, and no fact the API answers is lost. Never
// for a write the API answers from (a fetch, a phase).
const countAsync = `SELECT set_config('synchronous_commit', 'off', true)`

// queueCount queues the guarded count of c; r.Window stays nil when the
// tokens did not name the VM.
func queueCount(b *pgx.Batch, c VMCall, r *VMCallRows) {
	n := c.Count
	b.Queue(countVMCall, c.VMID, n.Route, n.Now, n.Per.Microseconds(), c.IMDSHash, c.BearerHash).Query(
		func(rows pgx.Rows) error {
			for rows.Next() {
				var w vmlimit.Window
				if err := rows.Scan(&w.Calls, &w.Started); err != nil {
					return err
				}
				r.Window = &w
			}
			return rows.Err()
		})
}
