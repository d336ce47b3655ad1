package founding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/requestid"
	"github.com/excloud/k8sapi/internal/store"
)

// An operator's admin kubeconfig is a system:masters certificate that
// expires soon and can always be had again: a founding's answer carries one
// of the default lifetime, and POST /clusters/{id}/kubeconfig issues another
// whenever the operator asks (kOps' `export kubeconfig --admin`). Each
// issue is recorded before it is answered (store.RecordKubeconfigIssue):
// who asked, when, the certificate's serial and expiry, the request. The key
// is never stored.

// Lifetimes of an admin kubeconfig (POST /clusters/{id}/kubeconfig's ttl;
// the API description repeats them). Five minutes is enough for one
// command; a week covers a long-running job's credential, and longer lives
// are what the short life is meant to end.
const (
	DefaultKubeconfigTTL = pki.OperatorAdminLifetime
	MinKubeconfigTTL     = 5 * time.Minute
	MaxKubeconfigTTL     = 7 * 24 * time.Hour
)

// KubeconfigRequest is the optional body of POST /clusters/{id}/kubeconfig.
type KubeconfigRequest struct {
	// TTL is a Go duration ("12h", "90m"); absent: DefaultKubeconfigTTL.
	TTL *string `json:"ttl"`
}

// Lifetime is the request's ttl, or the default when it names none; a ttl
// that is no duration or is out of bounds is a 400 naming the field.
func (r KubeconfigRequest) Lifetime() (time.Duration, error) {
	if r.TTL == nil {
		return DefaultKubeconfigTTL, nil
	}
	ttl, err := time.ParseDuration(*r.TTL)
	if err != nil {
		return 0, apperr.InvalidRequest.Detailf("ttl: must be a Go duration such as %q or %q", "12h", "90m")
	}
	if ttl < MinKubeconfigTTL || ttl > MaxKubeconfigTTL {
		return 0, apperr.InvalidRequest.Detailf("ttl: must be between %s and %s", shortDuration(MinKubeconfigTTL), shortDuration(MaxKubeconfigTTL))
	}
	return ttl, nil
}

// shortDuration spells a whole number of hours or minutes as an operator
// would ("168h", "5m"), not time.Duration's "168h0m0s".
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// IssuedKubeconfig is the 201 body of POST /clusters/{id}/kubeconfig.
type IssuedKubeconfig struct {
	ClusterID  int64  `json:"cluster_id"`
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	// User and Context are the kubeconfig's user and context (its cluster
	// entry is Name): bundle.AdminUser and bundle.AdminContext.
	User      string    `json:"user"`
	Context   string    `json:"context"`
	Serial    string    `json:"serial"`
	ExpiresAt time.Time `json:"expires_at"`
}

// IssueKubeconfig issues a fresh admin kubeconfig of one of org's active
// clusters, living the request's ttl.
func (s *Service) IssueKubeconfig(ctx context.Context, org auth.Principal, id int64, req KubeconfigRequest) (*IssuedKubeconfig, error) {
	ttl, err := req.Lifetime()
	if err != nil {
		return nil, err
	}
	c, err := s.Store.Cluster(ctx, org.OrgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return nil, databaseError(err)
	}
	if c.Status != store.StatusActive {
		return nil, notActive(c.Status)
	}
	trust, err := keyring.OpenCA(ctx, s.Envelope, &c, pki.ClusterCA)
	if err != nil {
		return nil, s.trustError(ctx, &c, err)
	}
	return s.issueAdmin(ctx, org, trust, &c, ttl)
}

// Kubeconfigs lists the recorded issues of admin kubeconfigs of one of
// org's clusters, newest first (store.MaxKubeconfigIssuesShown of them).
func (s *Service) Kubeconfigs(ctx context.Context, org auth.Principal, id int64) ([]store.KubeconfigIssue, error) {
	issues, err := s.Store.KubeconfigIssues(ctx, org.OrgID, id)
	return issues, recordError(err)
}

// recordError is the answer to a failure to list a record of one of an
// org's clusters: another org's cluster does not exist for it.
func recordError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound.Detail("no such cluster")
	}
	return databaseError(err)
}

// issueAdmin mints an admin identity of cluster c for org's operator,
// living ttl, signed by the cluster CA in t; renders its kubeconfig for
// the shared control-plane name; and records the issue. A kubeconfig whose
// issue is not recorded is not handed out.
func (s *Service) issueAdmin(ctx context.Context, org auth.Principal, t *pki.Trust, c *store.Cluster, ttl time.Duration) (*IssuedKubeconfig, error) {
	cluster, _, err := clusterfacts.FromRows(c, nil)
	if err != nil {
		return nil, err
	}
	now := s.now()
	issuer := pki.Issuer{Algorithm: cluster.Algorithm, Now: func() time.Time { return now }, LeafLifetime: ttl}
	who := org.Who()
	kp, err := issuer.Issue(t, pki.OperatorAdmin, pki.Subject{Name: AdminCommonName(who)})
	if err != nil {
		return nil, err
	}
	cert, err := pki.ParseCert(kp.CertPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the admin certificate just issued: %w", err)
	}
	kubeconfig, err := s.Renderer.Kubeconfig(bundle.KubeconfigInput{
		ClusterName: c.Name, Server: "https://" + c.ControlPlaneDNSName + ":6443",
		CAPEM: []byte(c.CACert), Identity: kp,
	})
	if err != nil {
		return nil, err
	}
	issue := store.KubeconfigIssue{
		ClusterID: c.ID, Serial: cert.SerialNumber.Text(16), IssuedAt: now, ExpiresAt: cert.NotAfter.UTC(),
		IssuedBy: who, RequestID: requestid.From(ctx),
	}
	if err := s.Store.RecordKubeconfigIssue(ctx, issue); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, apperr.ClusterNotActive.Detail("the cluster stopped being active; no kubeconfig was issued")
		}
		return nil, databaseError(err)
	}
	return &IssuedKubeconfig{
		ClusterID: c.ID, Name: c.Name, Kubeconfig: kubeconfig,
		User: bundle.AdminUser(c.Name), Context: bundle.AdminContext(c.Name),
		Serial: issue.Serial, ExpiresAt: issue.ExpiresAt,
	}, nil
}

// AdminCommonName is the common name of an operator's admin certificate,
// the user the API server knows it as: k8sapi's prefix and who asked
// (auth.Principal.Who), e.g. "k8sapi:org:7:token:5e884898da28".
func AdminCommonName(who string) string { return "k8sapi:" + who }

// notActive is the 409 of a cluster that is founding, failed, deleting or
// deleted.
func notActive(status string) error {
	return apperr.ClusterNotActive.Detailf("the cluster is %s; only an active cluster issues admin kubeconfigs", status)
}
