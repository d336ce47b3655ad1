package vmstandin

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
)

// bootWorker boots a pool's worker as exk8s-bootstrap-worker.sh does on
// the API side: it fetches the worker's bundle (no key in it), makes the
// kubelet's client and serving keys here, has k8sapi sign a request for
// each, checks that each answer is the cluster CA's certificate for its
// own key, then reports kubelet_started and ready. Ready, it renews as the
// worker's renewal timer does, over the keys it made, until it is gone.
func (p *Player) bootWorker(vmID int64, log *slog.Logger) error {
	var b nodebootstrap.WorkerBundle
	status := bundle.WorkerStatusPathTemplate
	if err := p.fetchWithRetries(vmID, bundle.WorkerPathTemplate, status, &b, log); err != nil {
		return err
	}
	ids, err := p.signKubelet(vmID, b)
	if err != nil {
		p.fail(vmID, status, "having the kubelet's certificates signed", err, log)
		return err
	}
	if err := p.reportPhases(vmID, status, Phases(Worker, false), log); err != nil {
		return err
	}
	log.Info("stand-in vm reported ready; it renews its certificates", "every", p.cfg.RenewEvery.String())
	return p.keepUp([]duty{p.renewal(vmID, workerRenewal, ids, log)})
}

// signKubelet sends the worker's two requests, each over a key born here,
// and checks the answers: the worker's identities.
func (p *Player) signKubelet(vmID int64, b nodebootstrap.WorkerBundle) (identities, error) {
	ids := identities{{name: pki.KubeletClient, ca: b.CACert}, {name: pki.KubeletServing, ca: b.CACert}}
	for i := range ids {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		ids[i].key = key
	}
	var req nodebootstrap.WorkerCSRRequest
	var err error
	if req.KubeletClient, err = kubeletCSR(ids[0].key, b.NodeName, nil); err != nil {
		return nil, err
	}
	if req.KubeletServing, err = kubeletCSR(ids[1].key, b.NodeName, []string{b.IPv4, b.IPv6}); err != nil {
		return nil, err
	}
	body, _ := json.Marshal(req)
	var certs nodebootstrap.WorkerCertificates
	if err := p.vmCall(vmID, http.MethodPost, bundle.WorkerCSRPathTemplate, body, &certs); err != nil {
		return nil, err
	}
	return ids, ids.take(map[pki.Name]string{pki.KubeletClient: certs.KubeletClient, pki.KubeletServing: certs.KubeletServing})
}

// kubeletCSR is a PEM request over key for node's kubelet
// (system:node:<node> in system:nodes), as the worker's script makes it:
// the serving one (ips given) names the node and its addresses too.
func kubeletCSR(key crypto.Signer, node string, ips []string) (string, error) {
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}
	if ips != nil {
		tmpl.DNSNames = []string{node}
	}
	for _, ip := range ips {
		if a := net.ParseIP(ip); a != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, a)
		}
	}
	return certificateRequest(key, tmpl)
}

// signedFor checks that certPEM is signed by the CA of caPEM and is for
// key, as the node's scripts install nothing else.
func signedFor(caPEM, certPEM string, key crypto.PublicKey) error {
	ca, err := parseCert(caPEM)
	if err != nil {
		return fmt.Errorf("the bundle's CA: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return err
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("not signed by the cluster CA: %w", err)
	}
	if k, ok := key.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(cert.PublicKey) {
		return errors.New("not for this node's key")
	}
	return nil
}

func parseCert(s string) (*x509.Certificate, error) {
	blk, _ := pem.Decode([]byte(s))
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}
