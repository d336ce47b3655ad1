// Package auth answers who is calling: operators by bearer principal token,
// VMs by an IMDS session token plus the bearer token the platform issued to
// that VM (the four proofs of GET /bootstrap/control-plane/{vm_id}).
//
// Tokens have a purpose: a token the platform issued to a VM names the VM
// (principal_tokens.vm_id) and opens that VM's bootstrap routes only; an
// operator's token names no VM and opens the operator routes only. Either
// used for the other is 403 token_scope.
//
// In: raw header values and the token tables (through Tokens). Out: a
// Principal or a BootstrapVM, or an *apperr.Error that fails closed. The
// Authorization header is parsed here once; the Principal carries the
// validated token on for the platform calls made on the caller's behalf.
// Tokens are looked up only as SHA-256 hashes.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// Tokens is the part of the store auth reads.
type Tokens interface {
	PrincipalTokenByHash(ctx context.Context, hash string) (store.PrincipalToken, error)
	VMCallLookup(ctx context.Context, c store.VMCall) (store.VMCallRows, error)
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
	// VMID is the VM the token was issued to; 0 for an operator.
	VMID int64
	// bearer is the validated token itself, for Bearer.
	bearer string
}

// Bearer is the validated token, to act on the caller's behalf on the
// platform APIs (internal/platformauth). Unexported behind a method so it
// is never marshalled or logged with the Principal.
func (p Principal) Bearer() string { return p.bearer }

// fingerprintLen is how many hex digits of a token's SHA-256 name it in
// records: 48 bits, unique among any org's tokens in practice, and useless
// to anyone without the token.
const fingerprintLen = 12

// Who names the principal in what k8sapi records of it (an admin
// kubeconfig's issue): its org and its token's fingerprint, the first 12 hex
// digits of the token's SHA-256, which is also how the token tables begin
// its hash: "org:7:token:5e884898da28". Never the token itself.
func (p Principal) Who() string {
	return fmt.Sprintf("org:%d:token:%s", p.OrgID, Hash(p.bearer)[:fingerprintLen])
}

// NewPrincipal is a Principal as the token tables would have proved it
// (tests and stand-ins of the Authenticator).
func NewPrincipal(orgID, vmID int64, bearer string) Principal {
	return Principal{OrgID: orgID, VMID: vmID, bearer: bearer}
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
	return apperr.Unauthenticated.Detail(msg)
}

func forbidden(msg string) *apperr.Error {
	return apperr.Forbidden.Detail(msg)
}

// wrongPurpose refuses a valid token used where its purpose does not reach.
func wrongPurpose(msg string) *apperr.Error {
	return apperr.TokenScope.Detail(msg)
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
	return apperr.DatabaseUnavailable.Wrap(err)
}

// Operator validates an operator's Authorization header: a live principal
// token issued to no VM. A VM's token is refused (403 token_scope): it
// exists to fetch that VM's bundle, not to act for the org.
func (a *Authenticator) Operator(ctx context.Context, authorization string) (Principal, error) {
	p, err := a.principal(ctx, authorization)
	if err == nil && p.VMID != 0 {
		return Principal{}, wrongPurpose("a VM's token cannot be used on operator routes")
	}
	return p, err
}

// principal validates an Authorization header: a live principal token.
func (a *Authenticator) principal(ctx context.Context, authorization string) (Principal, error) {
	token, err := bearer(authorization)
	if err != nil {
		return Principal{}, err
	}
	row, err := a.Tokens.PrincipalTokenByHash(ctx, Hash(token))
	return a.livePrincipal(token, row, err)
}

// livePrincipal judges token's row as its lookup found it (err: how it did
// not): a live principal token.
func (a *Authenticator) livePrincipal(token string, row store.PrincipalToken, err error) (Principal, error) {
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
	p := Principal{OrgID: row.OrgID, bearer: token}
	if row.VMID != nil {
		p.VMID = *row.VMID
	}
	return p, nil
}

// BootstrapVM runs proofs two to four for a VM asking for vmID's bundle
// (proof one, vmID being a positive integer, is the caller's parse): the IMDS
// session token is live, the bearer token is a live token the platform
// issued to vmID itself (an operator's is 403 token_scope, another VM's
// 403), of the same org as the IMDS session, and that session is vmID's.
func (a *Authenticator) BootstrapVM(ctx context.Context, vmID int64, imdsToken, authorization string) (BootstrapVM, error) {
	vm, _, err := a.ProveVM(ctx, vmID, imdsToken, authorization, nil)
	return vm, err
}

// ProveVM is BootstrapVM that also counts the call (count: a route with a
// per-VM budget) in the round trip that looks both tokens up. The count
// comes back only when the call was counted: the store counts a call only
// when both tokens name vmID, so a stranger cannot spend a VM's budget.
func (a *Authenticator) ProveVM(ctx context.Context, vmID int64, imdsToken, authorization string,
	count *vmlimit.Count) (BootstrapVM, *vmlimit.Window, error) {
	imdsToken = strings.TrimSpace(imdsToken)
	if imdsToken == "" || len(imdsToken) > maxTokenLen {
		return BootstrapVM{}, nil, unauthenticated("an X-exc-imds-token header is required")
	}
	token, bearerErr := bearer(authorization)
	call := store.VMCall{VMID: vmID, IMDSHash: Hash(imdsToken)}
	if bearerErr == nil {
		call.BearerHash, call.Count = Hash(token), count
	}
	rows, err := a.Tokens.VMCallLookup(ctx, call)
	if err != nil {
		return BootstrapVM{}, nil, dependencyError(err)
	}
	vm, err := a.judgeVM(vmID, rows, token, bearerErr)
	return vm, rows.Window, err
}

// judgeVM runs the proofs over what the lookup found, in their order: the
// IMDS session, the bearer token's shape (bearerErr), the token itself,
// then purpose, org and VM.
func (a *Authenticator) judgeVM(vmID int64, rows store.VMCallRows, token string, bearerErr error) (BootstrapVM, error) {
	session, err := a.liveSession(rows.IMDS, rows.IMDSErr)
	if err != nil {
		return BootstrapVM{}, err
	}
	if bearerErr != nil {
		return BootstrapVM{}, bearerErr
	}
	principal, err := a.livePrincipal(token, rows.Principal, rows.PrincipalErr)
	switch {
	case err != nil:
		return BootstrapVM{}, err
	case principal.VMID == 0:
		return BootstrapVM{}, wrongPurpose("an operator's token cannot be used on a VM's bootstrap routes")
	case principal.OrgID != session.OrgID:
		return BootstrapVM{}, forbidden("the bearer token and the IMDS session belong to different orgs")
	case principal.VMID != vmID || session.VMID != vmID:
		return BootstrapVM{}, forbidden("a VM may only fetch its own bundle")
	}
	return BootstrapVM{VMID: vmID, OrgID: session.OrgID}, nil
}

// liveSession judges an IMDS session's row as its lookup found it.
func (a *Authenticator) liveSession(session store.IMDSToken, err error) (store.IMDSToken, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return session, unauthenticated("the IMDS token is not valid")
	case err != nil:
		return session, dependencyError(err)
	case !a.now().Before(session.ExpiryAt):
		return session, unauthenticated("the IMDS token is expired")
	}
	return session, nil
}
