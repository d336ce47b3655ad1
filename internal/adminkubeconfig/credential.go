package adminkubeconfig

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
)

// An operator's exec credential (POST /clusters/{id}/credentials) is the
// admin identity over a key the operator's machine made: k8sapi signs the
// request's key and nothing else of it, for 15 minutes
// (pki.OperatorCredentialLifetime), and the CLI asks again with the
// operator's token whenever it expires. So no admin key crosses the wire,
// and revoking the token ends the operator's cluster access within 15
// minutes. Each issue is recorded as every admin kubeconfig's is.

// MaxCSRBytes bounds the request's CSR: a P-384 or RSA-4096 request is
// well under 4 KiB.
const MaxCSRBytes = 8 << 10

// IssueCredential signs the key of req's certificate request as the
// admin identity of who asked, for one of org's active clusters. The
// request is read (and refused) before any row or key is touched.
func (s *Service) IssueCredential(ctx context.Context, org auth.Principal, id int64, req apitypes.CredentialRequest) (*apitypes.IssuedCredential, error) {
	user := AdminCommonName(org.Who())
	csr, err := operatorCSR(req, user)
	if err != nil {
		return nil, err
	}
	c, trust, err := s.clusterCA(ctx, org, id, "credentials are issued")
	if err != nil {
		return nil, err
	}
	now := s.Clock()
	issuer := s.Issuer("") // no key is made: the algorithm is the request's
	issuer.Now = func() time.Time { return now }
	certPEM, err := issuer.Reissue(trust, pki.OperatorCredential, pki.Subject{Name: user, AdminGroup: c.AdminGroup}, csr.PublicKey)
	if err != nil {
		return nil, err
	}
	cert, err := pki.ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the credential just issued: %w", err)
	}
	if err := s.record(ctx, org, &c, cert, now); err != nil {
		return nil, err
	}
	return &apitypes.IssuedCredential{
		ClusterID: c.ID, Name: c.Name, Server: serverOf(&c), CertificateAuthority: string(keyring.TrustPEM(&c, string(pki.ClusterCA))),
		Certificate: string(certPEM), User: user, Groups: cert.Subject.Organization,
		Serial: serialOf(cert), ExpiresAt: cert.NotAfter.UTC(),
	}, nil
}

// operatorCSR reads req's request through the shared key policy
// (pki.ParseCSR) and refuses one that asks to be someone: the certificate
// names whom k8sapi says (user, in its cluster-admins group), so a
// request may name that or nothing, never another user, a group such as
// system:masters, or a SAN.
func operatorCSR(req apitypes.CredentialRequest, user string) (*x509.CertificateRequest, error) {
	if req.CSR == "" {
		return nil, apperr.InvalidRequest.Detail("csr: required (a PEM CERTIFICATE REQUEST)")
	}
	if len(req.CSR) > MaxCSRBytes {
		return nil, apperr.InvalidRequest.Detailf("csr: must be at most %d bytes", MaxCSRBytes)
	}
	csr, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		return nil, apperr.InvalidRequest.Detailf("csr: %v", err)
	}
	if why := foreignIdentity(csr, user); why != "" {
		return nil, apperr.CSRNotAllowed.Detailf("csr: %s; leave the subject empty, k8sapi names who asked", why)
	}
	return csr, nil
}

// foreignIdentity says what csr asks for beyond user in k8sapi's group,
// "" when nothing.
func foreignIdentity(csr *x509.CertificateRequest, user string) string {
	if cn := csr.Subject.CommonName; cn != "" && cn != user {
		return fmt.Sprintf("common name %q is not the caller's (%q)", cn, user)
	}
	for _, o := range csr.Subject.Organization {
		if o != pki.ClusterAdminsGroup {
			return fmt.Sprintf("organization %q is not %q", o, pki.ClusterAdminsGroup)
		}
	}
	if n := len(csr.DNSNames) + len(csr.IPAddresses) + len(csr.EmailAddresses) + len(csr.URIs); n > 0 {
		return "subject alternative names are not an operator's"
	}
	return ""
}
