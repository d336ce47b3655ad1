package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrClaimed: another live request holds the idempotency key's claim.
var ErrClaimed = errors.New("the idempotency key is claimed by another request")

// FoundingClaim is a founding request's hold on its idempotency key from
// before its first remote call until it ends (migration 023).
type FoundingClaim struct {
	OrgID       int64
	Key         string
	Fingerprint string
	Lease       Lease
}

// ClaimFoundingKey takes c's key unless a cluster was founded under it
// (ErrDuplicate: replay it) or another request holds it and its lease has
// not run out at now (ErrClaimed, with the fingerprint of that request's
// body). A request that founds under the key claims it before its row is
// committed and lets go after, so no founding can slip between the two.
func (s *Store) ClaimFoundingKey(ctx context.Context, c FoundingClaim, now time.Time) (string, error) {
	var founded, ours bool
	var held *string
	err := s.pool.QueryRow(ctx, `WITH founded AS (
			SELECT 1 FROM kube_clusters WHERE org_id = $1 AND idempotency_key = $2
		), claimed AS (
			INSERT INTO founding_claims (org_id, idempotency_key, request_fingerprint, claim_owner, claimed_until)
			SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM founded)
			ON CONFLICT (org_id, idempotency_key) DO UPDATE SET request_fingerprint = excluded.request_fingerprint,
				claim_owner = excluded.claim_owner, claimed_until = excluded.claimed_until
			WHERE founding_claims.claimed_until < $6
			RETURNING true AS ours
		)
		SELECT EXISTS (SELECT 1 FROM founded), coalesce((SELECT ours FROM claimed), false),
			(SELECT request_fingerprint FROM founding_claims WHERE org_id = $1 AND idempotency_key = $2)`,
		c.OrgID, c.Key, c.Fingerprint, c.Lease.Owner, c.Lease.Until, now).Scan(&founded, &ours, &held)
	switch {
	case err != nil:
		return "", fmt.Errorf("claiming idempotency key: %w", err)
	case founded:
		return "", ErrDuplicate
	case !ours && held != nil:
		return *held, ErrClaimed
	case !ours: // another request claimed it after this statement began
		return "", ErrClaimed
	}
	return "", nil
}

// ReleaseFoundingKey lets go of c's claim, if c still holds it.
func (s *Store) ReleaseFoundingKey(ctx context.Context, c FoundingClaim) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM founding_claims WHERE org_id = $1 AND idempotency_key = $2 AND claim_owner = $3`,
		c.OrgID, c.Key, c.Lease.Owner)
	if err != nil {
		return fmt.Errorf("releasing idempotency key: %w", err)
	}
	return nil
}
