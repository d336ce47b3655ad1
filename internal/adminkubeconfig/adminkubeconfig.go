package adminkubeconfig

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/requestid"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Service issues and lists the admin kubeconfigs of an org's clusters.
type Service struct{ *usecase.Deps }

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

// IssueKubeconfig issues a fresh admin kubeconfig of one of org's active
// clusters, living the request's ttl.
func (s *Service) IssueKubeconfig(ctx context.Context, org auth.Principal, id int64, req KubeconfigRequest) (*apitypes.IssuedKubeconfig, error) {
	ttl, err := req.Lifetime()
	if err != nil {
		return nil, err
	}
	c, trust, err := s.clusterCA(ctx, org, id, "admin kubeconfigs are issued")
	if err != nil {
		return nil, err
	}
	return s.IssueAdmin(ctx, org, trust, &c, ttl)
}

// clusterCA is one of org's active clusters and its opened cluster CA,
// which signs every admin identity; what says what a cluster that is not
// active refuses.
func (s *Service) clusterCA(ctx context.Context, org auth.Principal, id int64, what string) (store.Cluster, *pki.Trust, error) {
	c, err := s.ActiveCluster(ctx, org, id, what)
	if err != nil {
		return store.Cluster{}, nil, err
	}
	trust, err := keyring.OpenCA(ctx, s.Envelope, &c, pki.ClusterCA)
	if err != nil {
		return store.Cluster{}, nil, s.TrustError(ctx, &c, err)
	}
	return c, trust, nil
}

// Kubeconfigs lists the recorded issues of admin kubeconfigs of one of
// org's clusters, newest first (store.MaxKubeconfigIssuesShown of them).
func (s *Service) Kubeconfigs(ctx context.Context, org auth.Principal, id int64) ([]apitypes.KubeconfigIssue, error) {
	rows, err := s.Store.KubeconfigIssues(ctx, org.OrgID, id)
	if err != nil {
		return nil, usecase.NoSuchCluster(err)
	}
	issues := make([]apitypes.KubeconfigIssue, len(rows))
	for i, r := range rows {
		issues[i] = apitypes.KubeconfigIssue{Serial: r.Serial, IssuedAt: r.IssuedAt, ExpiresAt: r.ExpiresAt,
			IssuedBy: r.IssuedBy, RequestID: r.RequestID}
	}
	return issues, nil
}

// IssueAdmin mints an admin identity of cluster c for org's operator,
// living ttl, signed by the cluster CA in t; renders its kubeconfig for
// the shared control-plane name; and records the issue. A kubeconfig whose
// issue is not recorded is not handed out.
func (s *Service) IssueAdmin(ctx context.Context, org auth.Principal, t *pki.Trust, c *store.Cluster, ttl time.Duration) (*apitypes.IssuedKubeconfig, error) {
	cluster, _, err := clusterfacts.FromRows(c, nil)
	if err != nil {
		return nil, err
	}
	now := s.Clock()
	issuer := pki.Issuer{Algorithm: cluster.Algorithm, Now: func() time.Time { return now }, LeafLifetime: ttl}
	kp, err := issuer.Issue(t, pki.OperatorAdmin, pki.Subject{Name: AdminCommonName(org.Who()), AdminGroup: c.AdminGroup})
	if err != nil {
		return nil, err
	}
	cert, err := pki.ParseCert(kp.CertPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the admin certificate just issued: %w", err)
	}
	kubeconfig, err := s.Renderer.Kubeconfig(bundle.KubeconfigInput{
		ClusterName: c.Name, Server: serverOf(c), CAPEM: keyring.TrustPEM(c, string(pki.ClusterCA)), Identity: kp,
	})
	if err != nil {
		return nil, err
	}
	if err := s.record(ctx, org, c, cert, now); err != nil {
		return nil, err
	}
	return &apitypes.IssuedKubeconfig{
		ClusterID: c.ID, Name: c.Name, Kubeconfig: kubeconfig,
		User: bundle.AdminUser(c.Name), Context: bundle.AdminContext(c.Name),
		Serial: serialOf(cert), ExpiresAt: cert.NotAfter.UTC(),
	}, nil
}

// record records the issue of cert, an admin identity of c, to org's
// operator at at: who, when, its serial and expiry, the request. An identity
// whose issue is not recorded is not handed out.
func (s *Service) record(ctx context.Context, org auth.Principal, c *store.Cluster, cert *x509.Certificate, at time.Time) error {
	issue := store.KubeconfigIssue{
		ClusterID: c.ID, Serial: serialOf(cert), IssuedAt: at, ExpiresAt: cert.NotAfter.UTC(),
		IssuedBy: org.Who(), RequestID: requestid.From(ctx),
	}
	err := s.Store.RecordKubeconfigIssue(ctx, issue)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.ClusterNotActive.Detail("the cluster stopped being active; nothing was issued")
	}
	if err != nil {
		return usecase.DatabaseError(err)
	}
	return nil
}

// serverOf is c's API endpoint for an operator: its shared control-plane
// name, whichever node answers it.
func serverOf(c *store.Cluster) string { return "https://" + c.ControlPlaneDNSName + ":6443" }

// serialOf is how a certificate's serial is recorded and shown: lower-case hex.
func serialOf(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }

// AdminCommonName is the common name of an operator's admin certificate,
// the user the API server knows it as: k8sapi's prefix and who asked
// (auth.Principal.Who), e.g. "k8sapi:org:7:token:5e884898da28".
func AdminCommonName(who string) string { return "k8sapi:" + who }
