// Package auth answers who is calling: operators by bearer principal token,
// VMs by an IMDS session token plus a bearer principal token (the four
// proofs of GET /bootstrap/control-plane/{vm_id}).
//
// In: raw header values and the token tables (through Tokens). Out: a
// Principal or a BootstrapVM, or an *apperr.Error that fails closed. Tokens
// are only ever handled as SHA-256 hashes past this package's entry.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
)

// Tokens is the part of the store auth reads.
type Tokens interface {
	PrincipalTokenByHash(ctx context.Context, hash string) (store.PrincipalToken, error)
	IMDSTokenByHash(ctx context.Context, hash string) (store.IMDSToken, error)
}

var _ Tokens = (*store.Store)(nil)

// PrincipalScope is the only token scope that may found clusters or fetch
// bundles.
const PrincipalScope = "principal"

// maxTokenLen bounds what we hash: no real token is longer.
const maxTokenLen = 512

// Authenticator validates tokens against the token tables.
type Authenticator struct {
	Tokens Tokens
	Now    func() time.Time
}

// Principal is an authenticated operator or VM identity.
type Principal struct {
	OrgID int64
}

// BootstrapVM is a VM that passed all four proofs.
type BootstrapVM struct {
	VMID, OrgID int64
}

// Hash is how tokens are stored and looked up: hex SHA-256.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func unauthenticated(msg string) *apperr.Error {
	return apperr.New(apperr.Unauthenticated, "unauthenticated", msg)
}

func forbidden(msg string) *apperr.Error {
	return apperr.New(apperr.Forbidden, "forbidden", msg)
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(header string) (string, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > maxTokenLen {
		return "", unauthenticated("a bearer token is required")
	}
	return token, nil
}

// dependencyError turns a store failure other than not-found into 503.
func dependencyError(err error) error {
	return apperr.Wrap(apperr.Unavailable, "unavailable", "the token service is unavailable", err)
}

// Principal validates an Authorization header and returns its org.
func (a *Authenticator) Principal(ctx context.Context, authorization string) (Principal, error) {
	token, err := bearer(authorization)
	if err != nil {
		return Principal{}, err
	}
	row, err := a.Tokens.PrincipalTokenByHash(ctx, Hash(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, unauthenticated("the bearer token is not valid")
	case err != nil:
		return Principal{}, dependencyError(err)
	case row.RevokedAt != nil || !a.now().Before(row.ExpiresAt):
		return Principal{}, unauthenticated("the bearer token is expired or revoked")
	case row.Scope != PrincipalScope:
		return Principal{}, forbidden("the bearer token is not a principal token")
	}
	return Principal{OrgID: row.OrgID}, nil
}

// BootstrapVM runs proofs two to four for a VM asking for vmID's bundle
// (proof one, vmID being a positive integer, is the caller's parse): the IMDS
// session token is live, the bearer token is a live principal token of the
// same org, and the IMDS session belongs to vmID itself.
func (a *Authenticator) BootstrapVM(ctx context.Context, vmID int64, imdsToken, authorization string) (BootstrapVM, error) {
	imdsToken = strings.TrimSpace(imdsToken)
	if imdsToken == "" || len(imdsToken) > maxTokenLen {
		return BootstrapVM{}, unauthenticated("an X-exc-imds-token header is required")
	}
	session, err := a.Tokens.IMDSTokenByHash(ctx, Hash(imdsToken))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return BootstrapVM{}, unauthenticated("the IMDS token is not valid")
	case err != nil:
		return BootstrapVM{}, dependencyError(err)
	case !a.now().Before(session.ExpiryAt):
		return BootstrapVM{}, unauthenticated("the IMDS token is expired")
	}
	principal, err := a.Principal(ctx, authorization)
	if err != nil {
		return BootstrapVM{}, err
	}
	if principal.OrgID != session.OrgID {
		return BootstrapVM{}, forbidden("the bearer token and the IMDS session belong to different orgs")
	}
	if session.VMID != vmID {
		return BootstrapVM{}, forbidden("a VM may only fetch its own bundle")
	}
	return BootstrapVM{VMID: vmID, OrgID: session.OrgID}, nil
}
