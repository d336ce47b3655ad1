package simulator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Token lifetimes the simulator grants, as the real IMDS and token service do.
const (
	IMDSTokenTTL      = 6 * time.Hour
	BootstrapTokenTTL = time.Hour
	ScopePrincipal    = "principal"
	// ScopeService is a service principal's token (k8sapi's reconciler):
	// it acts for the org named in platformhttp.OrgHeader on each request.
	// The real platform checks the service's grants; the simulator grants a
	// service token every org.
	ScopeService        = "service"
	bootstrapTokenDescr = "vm %d bootstrap"
)

// ErrNoSuchVM is returned for a VM that does not exist or is deleted.
var ErrNoSuchVM = errors.New("no such live vm")

// Execer is the part of pgx the token helpers need: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx all have it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// IssuePrincipalToken stores a new operator's bearer token for orgID with
// scope (the API accepts only ScopePrincipal; other scopes are for testing
// refusals), valid for ttl from now, and returns it. It names no VM. Only
// its hash is stored.
func IssuePrincipalToken(ctx context.Context, db Execer, orgID int64, scope string, ttl time.Duration) (string, error) {
	return issuePrincipalToken(ctx, db, tokenGrant{orgID: orgID, scope: scope,
		description: "issued by simulator.IssuePrincipalToken"}, time.Now().Add(ttl))
}

// IssueVMToken stores a new bearer token of orgID bound to vmID, as IMDS's
// access-token issues it, valid for ttl from now.
func IssueVMToken(ctx context.Context, db Execer, orgID, vmID int64, ttl time.Duration) (string, error) {
	return issuePrincipalToken(ctx, db, vmGrant(orgID, vmID), time.Now().Add(ttl))
}

// tokenGrant is what a principal token is issued for: an org, a scope, and
// the VM it is bound to (0: an operator's token, bound to none).
type tokenGrant struct {
	orgID, vmID int64
	scope       string
	description string
}

// vmGrant is the grant of a VM's token: the principal scope, bound to vmID.
func vmGrant(orgID, vmID int64) tokenGrant {
	return tokenGrant{orgID: orgID, vmID: vmID, scope: ScopePrincipal, description: fmt.Sprintf(bootstrapTokenDescr, vmID)}
}

// IssueIMDSToken stores a new IMDS session token for live VM vmID (in the
// VM's org), valid for ttl from now, and returns it. ErrNoSuchVM if the VM is
// unknown or deleted.
func IssueIMDSToken(ctx context.Context, db Execer, vmID int64, ttl time.Duration) (string, error) {
	return issueIMDSToken(ctx, db, vmID, time.Now().Add(ttl))
}

// HashToken is how every platform token is stored and looked up: hex SHA-256.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func issuePrincipalToken(ctx context.Context, db Execer, g tokenGrant, expiresAt time.Time) (string, error) {
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	_, err = db.Exec(ctx,
		`INSERT INTO principal_tokens (hash, org_id, vm_id, scope, description, expires_at)
		 VALUES ($1, $2, nullif($3, 0), $4, $5, $6)`,
		HashToken(tok), g.orgID, g.vmID, g.scope, g.description, expiresAt)
	if err != nil {
		return "", fmt.Errorf("storing principal token for org %d: %w", g.orgID, err)
	}
	return tok, nil
}

func issueIMDSToken(ctx context.Context, db Execer, vmID int64, expiresAt time.Time) (string, error) {
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	// One statement: the org comes from the VM row, and a deleted or unknown
	// VM inserts nothing.
	tag, err := db.Exec(ctx,
		`INSERT INTO imds_tokens (hash, vm_id, org_id, expiry_at)
		 SELECT $1, id, org_id, $3 FROM vms WHERE id = $2 AND deleted_at IS NULL`,
		HashToken(tok), vmID, expiresAt)
	if err != nil {
		return "", fmt.Errorf("storing imds token for vm %d: %w", vmID, err)
	}
	if tag.RowsAffected() == 0 {
		return "", fmt.Errorf("issuing imds token for vm %d: %w", vmID, ErrNoSuchVM)
	}
	return tok, nil
}

// newToken returns 256 random bits, hex: unguessable, and safe in headers
// and shell variables.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
