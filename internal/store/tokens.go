package store

import (
	"context"
	"fmt"
	"time"
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
	err := s.pool.QueryRow(ctx,
		`SELECT org_id, vm_id, scope, expires_at, revoked_at FROM principal_tokens WHERE hash = $1`, hash,
	).Scan(&t.OrgID, &t.VMID, &t.Scope, &t.ExpiresAt, &t.RevokedAt)
	if err != nil {
		return t, fmt.Errorf("looking up principal token: %w", notFound(err))
	}
	return t, nil
}

// IMDSTokenByHash looks an IMDS session token up by its hex SHA-256.
func (s *Store) IMDSTokenByHash(ctx context.Context, hash string) (IMDSToken, error) {
	var t IMDSToken
	err := s.pool.QueryRow(ctx,
		`SELECT vm_id, org_id, expiry_at FROM imds_tokens WHERE hash = $1`, hash,
	).Scan(&t.VMID, &t.OrgID, &t.ExpiryAt)
	if err != nil {
		return t, fmt.Errorf("looking up imds token: %w", notFound(err))
	}
	return t, nil
}
