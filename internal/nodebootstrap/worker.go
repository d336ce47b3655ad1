package nodebootstrap

import (
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
)

// A worker's keys are born on the worker (kops-controller is the model:
// the identity is attested by the platform, the names come from the
// platform, never from the request). The worker makes its kubelet's client
// and serving keys and sends one certificate request for each, with the
// VM's four proofs. k8sapi signs a request only if every name and address
// it asks for is the worker's as k8sapi recorded them from the compute API
// (its node name and its addresses), issues the certificate from the cert
// table's row with those records (never the request's names), and does so
// once per bootstrap window: a second request in the same window is
// refused, so a stolen IMDS session cannot mint a second identity.

// WorkerService is a worker's bootstrap: its bundle and its certificate
// requests, over the bundle service's window, issuer and keys. A type of
// its own, so a function that does not serve the worker's routes links
// none of it.
type WorkerService struct {
	*Service
	Workers Workers
}

// Workers is the part of the store a worker's bootstrap uses.
type Workers interface {
	WorkerForVM(ctx context.Context, vmID int64) (store.Topology, error)
	RecordWorkerSigned(ctx context.Context, vmID int64, window time.Time, issued []store.Identity) (bool, error)
	PoolByID(ctx context.Context, id int64) (store.Pool, error)
	progress.Recorder
}

var _ Workers = (*store.Store)(nil)

// WorkerCSRRequest is the body of POST /bootstrap/worker/{vm_id}/csr: PEM
// certificate requests for the kubelet's client identity
// (system:node:<name> in system:nodes) and its serving certificate (the
// node's name and addresses), each signed with the key it names.
type WorkerCSRRequest struct {
	KubeletClient  string `json:"kubelet_client_csr"`
	KubeletServing string `json:"kubelet_serving_csr"`
}

// WorkerCertificates is the answer: the two certificates and the CA that
// signed them.
type WorkerCertificates struct {
	KubeletClient  string `json:"kubelet_client_cert"`
	KubeletServing string `json:"kubelet_serving_cert"`
	CACert         string `json:"ca_cert"`
}

// workerCSR is one request a worker sends: the cert table's row it asks
// for, and the request.
type workerCSR struct {
	field string
	name  pki.Name
	pem   string
}

func (r WorkerCSRRequest) csrs() []workerCSR {
	return []workerCSR{
		{"kubelet_client_csr", pki.KubeletClient, r.KubeletClient},
		{"kubelet_serving_csr", pki.KubeletServing, r.KubeletServing},
	}
}

// SignWorker signs a worker's certificate requests, once per bootstrap
// window: bad or foreign requests are refused before anything is opened.
func (s *WorkerService) SignWorker(ctx context.Context, vm auth.BootstrapVM, req WorkerCSRRequest) (*WorkerCertificates, error) {
	t, err := loadTarget(ctx, vm, s.Workers.WorkerForVM, "worker")
	if err != nil {
		return nil, err
	}
	if err := s.windowRefusal(t, s.now()); err != nil {
		return nil, err
	}
	subject, err := t.cluster.CertSubject(t.node)
	if err != nil {
		return nil, err
	}
	keys, err := checkWorkerCSRs(req, subject)
	if err != nil {
		return nil, err
	}
	out, err := s.signWorker(ctx, t, subject, keys)
	if err != nil {
		return nil, err
	}
	if err := s.recordSigned(ctx, t, out); err != nil {
		return nil, err
	}
	s.certificatesSigned(ctx, vm)
	return out, nil
}

// certificatesSigned moves vm's worker to certificates_signed once its
// signing is recorded. Best effort, as bundle_fetched: a refusal (a report
// raced it) is logged, never answered; the worker holds its certificates
// and its next report moves it on.
func (s *WorkerService) certificatesSigned(ctx context.Context, vm auth.BootstrapVM) {
	if err := progress.Advance(ctx, s.Workers, vm, clusterfacts.Worker, clusterfacts.CertificatesSigned, ""); err != nil {
		s.logger().WarnContext(ctx, "recording certificates_signed failed", "vm_id", vm.VMID, "cause", err.Error())
	}
}

// checkWorkerCSRs parses each request and holds it to subject: the public
// key of each, or a 4xx naming what is wrong.
func checkWorkerCSRs(req WorkerCSRRequest, subject pki.Subject) (map[pki.Name]crypto.PublicKey, error) {
	keys := map[pki.Name]crypto.PublicKey{}
	for _, c := range req.csrs() {
		if len(c.pem) > MaxCSRBytes {
			return nil, apperr.InvalidRequest.Detailf("%s: must be at most %d bytes", c.field, MaxCSRBytes)
		}
		csr, err := pki.ParseCSR([]byte(c.pem))
		if err != nil {
			return nil, apperr.InvalidRequest.Detailf("%s: %v", c.field, err)
		}
		if why := foreignName(csr, c.name, subject); why != "" {
			return nil, apperr.CSRNotAllowed.Detailf("%s: %s", c.field, why)
		}
		keys[c.name] = csr.PublicKey
	}
	return keys, nil
}

var nodeOrganization = []string{"system:nodes"}

// foreignName says what csr asks for that the worker's records (subject)
// do not give it, "" when nothing: its common name and organization are
// its row's, its DNS names the node's name, its addresses the node's.
func foreignName(csr *x509.CertificateRequest, name pki.Name, subject pki.Subject) string {
	spec, _ := pki.Lookup(name) // both rows are the table's
	if cn := spec.CommonName(subject); csr.Subject.CommonName != cn && csr.Subject.CommonName != "system:node:"+subject.Name {
		return fmt.Sprintf("common name %q is not this node's (%q)", csr.Subject.CommonName, cn)
	}
	// The kubelet's own serving requests say system:nodes too; what the
	// certificate carries is the row's either way.
	if o := csr.Subject.Organization; len(o) > 0 && !slices.Equal(o, spec.Organization) && !slices.Equal(o, nodeOrganization) {
		return fmt.Sprintf("organization %q is not %q", csr.Subject.Organization, spec.Organization)
	}
	var dns []string
	var ips []net.IP
	if spec.SANs != nil {
		dns, ips = spec.SANs(subject)
	}
	for _, d := range csr.DNSNames {
		if !slices.Contains(dns, d) {
			return fmt.Sprintf("DNS name %q is not this node's", d)
		}
	}
	for _, ip := range csr.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Sprintf("address %s is not this node's", ip)
		}
	}
	if len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return "email addresses and URIs are not allowed"
	}
	return ""
}

// signWorker opens the cluster CA alone and issues each certificate from
// its cert table row over the worker's own key.
func (s *WorkerService) signWorker(ctx context.Context, t *target, subject pki.Subject, keys map[pki.Name]crypto.PublicKey) (*WorkerCertificates, error) {
	trust, err := keyring.OpenCA(ctx, s.Envelope, t.row, pki.ClusterCA)
	if err != nil {
		return nil, s.openError(ctx, t, err)
	}
	certs := map[pki.Name]string{}
	for name, pub := range keys {
		cert, err := s.issuer(t.cluster.Algorithm).Reissue(trust, name, subject, pub)
		if err != nil {
			return nil, err
		}
		certs[name] = string(cert)
	}
	return &WorkerCertificates{KubeletClient: certs[pki.KubeletClient], KubeletServing: certs[pki.KubeletServing],
		CACert: string(keyring.TrustPEM(t.row, string(pki.ClusterCA)))}, nil
}

// recordSigned records this window's signing and the certificates' serials
// before they are answered: a second request of the window is refused
// (409), a signing that cannot be recorded is not answered (503).
func (s *WorkerService) recordSigned(ctx context.Context, t *target, out *WorkerCertificates) error {
	issued := []store.Identity{{Name: string(pki.KubeletClient), Cert: out.KubeletClient},
		{Name: string(pki.KubeletServing), Cert: out.KubeletServing}}
	first, err := s.Workers.RecordWorkerSigned(ctx, t.self.VMID, t.self.BootstrapOpenedAt, issued)
	if err != nil {
		return databaseError(err)
	}
	if !first {
		return apperr.BootstrapClosed.Detail("this worker's certificate requests were signed in its current bootstrap window; " +
			"an operator may re-open it with POST /clusters/{id}/nodes/{vm_id}/rebootstrap")
	}
	return nil
}

// WorkerBundle is what a worker needs to join, as facts (GET
// /bootstrap/worker/{vm_id}): whom to trust (the cluster CA's certificate,
// never a key), where the API server is, its own name and addresses as
// k8sapi recorded them, the cluster's networks, its pool's labels and
// taints, and where to send its certificate requests. Nothing in it is a
// secret and nothing admits it to the cluster: only the certificates its
// own keys earn (SignWorker) do.
type WorkerBundle struct {
	ClusterName       string            `json:"cluster_name"`
	NodeName          string            `json:"node_name"`
	NodePool          string            `json:"node_pool"`
	APIServerURL      string            `json:"api_server_url"`
	CACert            string            `json:"ca_cert"`
	KubernetesVersion string            `json:"kubernetes_version"`
	ClusterDomain     string            `json:"cluster_domain"`
	ClusterDNS        string            `json:"cluster_dns"`
	PodCIDR           string            `json:"pod_cidr"`
	ServiceCIDR       string            `json:"service_cidr"`
	CNI               string            `json:"cni"`
	IPv4              string            `json:"ipv4"`
	IPv6              string            `json:"ipv6,omitempty"`
	PublicIPv4        string            `json:"public_ipv4,omitempty"`
	Labels            map[string]string `json:"labels"`
	Taints            []apitypes.Taint  `json:"taints"`
	CSRPath           string            `json:"csr_path"`
	WindowClosesAt    time.Time         `json:"bootstrap_window_closes_at"`
	// Files and FileModes are the worker's files by host path, as the
	// userdata shim writes them (bundle.RenderWorker): no key among them.
	Files     map[string]string `json:"files"`
	FileModes map[string]string `json:"file_modes"`
}

// WorkerBundle is vm's worker bundle, while its bootstrap window is open;
// each fetch past the proofs is recorded, served or refused.
func (s *WorkerService) WorkerBundle(ctx context.Context, vm auth.BootstrapVM) (*WorkerBundle, error) {
	t, err := loadTarget(ctx, vm, s.Workers.WorkerForVM, "worker")
	if err != nil {
		return nil, err
	}
	now := s.now()
	if err := s.windowRefusal(t, now); err != nil {
		s.recordRefusal(ctx, vm, now)
		return nil, err
	}
	pool, err := s.Workers.PoolByID(ctx, t.self.PoolID)
	if err != nil {
		return nil, databaseError(err)
	}
	b, err := workerBundleOf(t, pool, s.Window)
	if err != nil {
		return nil, err
	}
	if err := s.renderWorker(t, pool, b); err != nil {
		return nil, err
	}
	// A fetch that cannot be recorded is not served; a pending worker's
	// first one moves it to bundle_fetched.
	written, err := s.Store.RecordFetch(ctx, store.FetchWrites{Fetch: fetchOf(ctx, vm, store.FetchServed, now),
		Phase: progress.FetchPhase(vm, clusterfacts.Worker, t.phase)})
	if err != nil {
		return nil, databaseError(err)
	}
	s.phaseRecorded(ctx, vm, t, written.Phase)
	return b, nil
}

func workerBundleOf(t *target, pool store.Pool, window time.Duration) (*WorkerBundle, error) {
	_, dnsIP, err := clusterfacts.ServiceIPs(t.row.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	c, n := t.row, t.self
	return &WorkerBundle{ClusterName: c.Name, NodeName: n.Name, NodePool: pool.Name,
		APIServerURL: bundle.WorkerAPIServerURL(t.cluster), CACert: string(keyring.TrustPEM(c, string(pki.ClusterCA))), KubernetesVersion: t.cluster.KubernetesVersion,
		ClusterDomain: c.ClusterDomain, ClusterDNS: dnsIP.String(), PodCIDR: c.PodCIDR, ServiceCIDR: c.ServiceCIDR, CNI: c.CNI,
		IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4, Labels: pool.Labels, Taints: clusterspec.TaintsOf(pool.Taints),
		CSRPath:        strings.Replace(bundle.WorkerCSRPathTemplate, "{vm_id}", strconv.FormatInt(n.VMID, 10), 1),
		WindowClosesAt: n.BootstrapOpenedAt.Add(window).UTC()}, nil
}

// renderWorker renders t's files into b, from the artifact set its
// cluster recorded and its pool's labels and taints.
func (s *WorkerService) renderWorker(t *target, pool store.Pool, b *WorkerBundle) error {
	artifacts, err := s.artifacts(t.row, t.cluster)
	if err != nil {
		return err
	}
	files, err := s.Renderer.RenderWorker(bundle.WorkerInput{Cluster: t.cluster, ControlPlane: controlPlaneOf(t),
		Worker: t.node, Pool: pool.Name, Labels: pool.Labels, Taints: taintsOf(pool.Taints), Artifacts: artifacts,
		CACert: keyring.TrustPEM(t.row, string(pki.ClusterCA))})
	if err != nil {
		return err
	}
	b.Files, b.FileModes = bundle.FileMaps(files)
	return nil
}

// controlPlaneOf is t's peers but its own node: WorkerForVM loads the
// worker and the cluster's control-plane nodes.
func controlPlaneOf(t *target) []clusterfacts.Node {
	var out []clusterfacts.Node
	for _, n := range t.peers {
		if n.VMID != t.self.VMID {
			out = append(out, n)
		}
	}
	return out
}

func taintsOf(taints []store.Taint) []bundle.Taint {
	out := make([]bundle.Taint, len(taints))
	for i, t := range taints {
		out[i] = bundle.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
	}
	return out
}
