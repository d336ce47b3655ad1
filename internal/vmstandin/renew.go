package vmstandin

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
)

// identity is one certificate a stand-in holds as its node would: the key
// it signs with, the certificate over it and the CA that signed that.
type identity struct {
	name     pki.Name
	key      crypto.Signer
	cert, ca string // PEM
}

// identities are what a stand-in renews, as its node's renewal script does.
type identities []identity

// renewal is one role's renewal route and the body it takes.
type renewal struct {
	path string
	body func(ids identities, csrs map[string]string) any
}

// The two roles' renewals: a control-plane node's requests alone (k8sapi
// keeps its certificates), a worker's with the certificate each proves
// (k8sapi keeps none of a worker's).
var (
	controlPlaneRenewal = renewal{bundle.RenewPathTemplate, func(_ identities, csrs map[string]string) any {
		return nodebootstrap.RenewalRequest{CSRs: csrs}
	}}
	workerRenewal = renewal{bundle.WorkerRenewPathTemplate, func(ids identities, csrs map[string]string) any {
		return nodebootstrap.WorkerRenewalRequest{CSRs: csrs, Certificates: ids.certs()}
	}}
)

// controlPlaneIdentities are the renewable identities whose keys a
// control-plane bundle brings (pki.Renewable), each with its certificate
// and its signer's, read from the bundle's files as the node's renewal
// script reads them from disk.
func controlPlaneIdentities(files map[string]string) (identities, error) {
	var out identities
	for _, name := range pki.Renewable() {
		keyPEM, ok := files[bundle.KeyPath(name)]
		if !ok {
			continue
		}
		key, err := pki.ParseKey([]byte(keyPEM))
		if err != nil {
			return nil, fmt.Errorf("the bundle's %s key: %w", name, err)
		}
		spec, _ := pki.Lookup(name)
		out = append(out, identity{name: name, key: key, cert: files[bundle.CertPath(name)], ca: files[bundle.CertPath(spec.Signer)]})
	}
	return out, nil
}

// renew asks k8sapi to renew ids through r, proving each key with a
// request signed by it, and keeps each answered certificate once it is
// checked to be its signer's over its own key. Only the VM's being gone
// or the player closing is an error: a refused renewal is logged, and the
// node goes on with the certificates it has until the next, as the
// script's node does.
func (p *Player) renew(vmID int64, r renewal, ids identities, log *slog.Logger) error {
	renewed, err := p.askRenewal(vmID, r, ids)
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return err
	}
	if err != nil {
		log.Warn("stand-in vm: renewing its certificates failed; it keeps those it has", slog.String("error", err.Error()))
		return nil
	}
	log.Info("stand-in vm: renewed its certificates", "renewed", renewed)
	return nil
}

// askRenewal is one renewal: its request, then its answer checked and kept.
func (p *Player) askRenewal(vmID int64, r renewal, ids identities) ([]pki.Name, error) {
	csrs, err := ids.csrs()
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(r.body(ids, csrs))
	var answer nodebootstrap.RenewalResponse
	if err := p.vmCall(vmID, http.MethodPost, r.path, body, &answer); err != nil {
		return nil, err
	}
	return answer.Renewed, ids.take(answer.Certificates)
}

// csrs are one request per identity by name, each signed with its key.
func (ids identities) csrs() (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		csr, err := possessionCSR(id.key, string(id.name))
		if err != nil {
			return nil, err
		}
		out[string(id.name)] = csr
	}
	return out, nil
}

// certs are the certificates the identities hold, by name.
func (ids identities) certs() map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		out[string(id.name)] = id.cert
	}
	return out
}

// take keeps the answered certificates, each checked first: every identity
// answered, by its signer, over its own key. None is kept unless all are.
func (ids identities) take(answered map[pki.Name]string) error {
	for _, id := range ids {
		if err := signedFor(id.ca, answered[id.name], id.key.Public()); err != nil {
			return fmt.Errorf("%s: %w", id.name, err)
		}
	}
	for i := range ids {
		ids[i].cert = answered[ids[i].name]
	}
	return nil
}

// possessionCSR is a PEM request over key: k8sapi reads of it only the key
// it was signed with, and issues the names it recorded.
func possessionCSR(key crypto.Signer, name string) (string, error) {
	return certificateRequest(key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}})
}

// certificateRequest is tmpl signed with key, as PEM.
func certificateRequest(key crypto.Signer, tmpl *x509.CertificateRequest) (string, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), nil
}
