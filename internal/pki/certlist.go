package pki

import (
	"crypto/x509"
	"net"
	"time"
)

// Name identifies one entry of the cert table; it is also the file stem the
// bundle writes (ca.pem, etcd-peer.pem, ...).
type Name string

// The cert table's entries.
const (
	ClusterCA    Name = "ca"
	EtcdCA       Name = "etcd-ca"
	FrontProxyCA Name = "front-proxy-ca"

	EtcdPeer  Name = "etcd-peer"
	APIServer Name = "apiserver"

	Admin                  Name = "admin"
	APIServerEtcdClient    Name = "apiserver-etcd-client"
	APIServerKubeletClient Name = "apiserver-kubelet-client"
	FrontProxyClient       Name = "front-proxy-client"
	ControllerManager      Name = "controller-manager"
	Scheduler              Name = "scheduler"
	KubeProxy              Name = "kube-proxy"
	KubeletClient          Name = "kubelet-client"
	KubeletServing         Name = "kubelet"
	ControlPlaneTaint      Name = "control-plane-taint"

	OperatorAdmin      Name = "operator-admin"
	OperatorCredential Name = "operator-credential"
)

// ClusterAdminsGroup is the group of every admin identity k8sapi issues an
// operator, which the control plane's RBAC binds to cluster-admin
// (control-plane-rbac.yaml). Not system:masters, which no authorizer can
// refuse: a binding can be deleted, and each identity's access ends with
// its short-lived certificate (kubeadm's kubeadm:cluster-admins since
// 1.29 is the model).
const ClusterAdminsGroup = "k8sapi:cluster-admins"

// Phase says when a certificate is made.
type Phase int

const (
	// PhaseRoot certs are the cluster's CAs, made once at founding.
	PhaseRoot Phase = iota
	// PhaseFounding certs are per-node serving identities, made at founding
	// and stored (keys sealed) so every fetch serves the same identity.
	PhaseFounding
	// PhaseFetch certs are issued on a node's first bundle fetch of each
	// bootstrap window (founding, or an operator's re-open) and stored
	// sealed: every later fetch in that window is served the same ones, so
	// fetching again mints nothing.
	PhaseFetch
	// PhaseOperator certs are issued to an operator on request (a founding's
	// answer, POST /clusters/{id}/kubeconfig, and over the operator's own
	// key POST /clusters/{id}/credentials): never to a node, never stored,
	// never renewed (the operator asks for another).
	PhaseOperator
	// PhaseRetired certs are no longer issued: a node bootstrapped before
	// their retirement still holds one, and renews it (its renewal script
	// names it) until its next bootstrap, which issues it none. Their
	// specs stay so the renewal can re-issue them.
	PhaseRetired
)

// Lifetimes, explicit so the table says how long each cert lives. A leaf's
// may be overridden (Issuer.LeafLifetime, from LEAF_CERT_LIFETIME); a CA's
// never is: renewal re-issues leaves only, and CA rotation is its own step.
const (
	caLifetime = 10 * 365 * 24 * time.Hour
	// DefaultLeafLifetime is every leaf's lifetime unless configured.
	DefaultLeafLifetime = 365 * 24 * time.Hour
	leafLifetime        = DefaultLeafLifetime
	// OperatorAdminLifetime is the operator's admin identity's lifetime
	// unless the request asks for another: a working day, after which a
	// lost kubeconfig is worthless.
	OperatorAdminLifetime = 12 * time.Hour
	// OperatorCredentialLifetime is the exec credential's: the longest an
	// operator whose token is revoked keeps their access to the cluster.
	OperatorCredentialLifetime = 15 * time.Minute
	// backdate absorbs clock skew between k8sapi and the VMs.
	backdate = 5 * time.Minute
)

// Subject is whom a certificate names: the node facts that go into its
// common name and SANs, or for the operator's admin identity only Name
// (who asked for it, k8sapi:org:7:token:...).
type Subject struct {
	Name                string // cp-1.cluster-42.internal
	ControlPlaneDNSName string // exk8s-7-2a.k8s.excloud.co.in
	ClusterDomain       string // cluster.local: the cluster's own, a per-cluster fact
	IPv4, IPv6          string
	PublicIPv4          string
	ServiceIP           net.IP // first IP of the service CIDR (the kubernetes Service)
	// Initial is the cluster's initial control-plane node, the one that
	// installs the addons: only it gets the InitialOnly identities.
	Initial bool
	// AdminGroup is an operator's group on a cluster whose RBAC binds
	// another than ClusterAdminsGroup (system:masters, on a cluster
	// founded before the binding); "" is ClusterAdminsGroup. Operator
	// certificates only.
	AdminGroup string
}

// Spec declares one certificate.
type Spec struct {
	Name     Name
	Phase    Phase
	Signer   Name // the CA that signs it; empty for self-signed roots
	IsCA     bool
	Lifetime time.Duration
	// Subject is a function because some identities name the node.
	CommonName   func(Subject) string
	Organization []string
	Usages       []x509.ExtKeyUsage
	// SANs returns DNS names and IPs; nil for client certs.
	SANs func(Subject) ([]string, []net.IP)
	// InitialOnly identities are issued to the initial node only.
	InitialOnly bool
	// FixedLifetime leaves live the table's Lifetime whatever the issuer
	// is told (Issuer.LeafLifetime): the exec credential's 15 minutes are
	// what revoking a token is promised to take.
	FixedLifetime bool
	// NewOnRestore CAs are made anew for a cluster restored from a
	// snapshot; every other CA is copied from the snapshot's cluster
	// (Issuer.RestoredTrust).
	NewOnRestore bool
}

// CertList is the one table of every certificate a cluster has, CAs first.
// kubeadm's GetDefaultCertList is the model: small constructors, parents
// named by CA.
func CertList() []Spec {
	return []Spec{
		rootCA(ClusterCA, "exk8s-cluster-ca"),
		// A restored cluster's etcd has a CA of its own: nothing in an
		// etcd snapshot was signed by it (it only guards etcd's
		// connections), and the old cluster's API servers still name a
		// replaced member's address, which the platform gives to the next
		// VM. Sharing the CA let them read and write a restored etcd at
		// that address (docs/ETCD-SNAPSHOTS.md).
		newOnRestore(rootCA(EtcdCA, "exk8s-etcd-ca")),
		rootCA(FrontProxyCA, "exk8s-front-proxy-ca"),

		// etcd uses one cert for client and peer traffic (stacked member).
		serving(EtcdPeer, EtcdCA, PhaseFounding, etcdSANs, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth),
		serving(APIServer, ClusterCA, PhaseFounding, apiserverSANs, x509.ExtKeyUsageServerAuth),

		// system:masters bypasses RBAC: the initial node needs it once, to
		// install the addons and the control plane's own RBAC; no other
		// node holds it (a node's own components need no more than their
		// identities below). Bootstrap-only: it lives one bootstrap window
		// (nodebootstrap) and is never renewed.
		initialOnly(client(Admin, ClusterCA, "cluster-admin", "system:masters")),
		client(APIServerEtcdClient, EtcdCA, "kube-apiserver-etcd-client"),
		client(APIServerKubeletClient, ClusterCA, "kube-apiserver-kubelet-client"),
		client(FrontProxyClient, FrontProxyCA, "front-proxy-client"),
		client(ControllerManager, ClusterCA, "system:kube-controller-manager"),
		client(Scheduler, ClusterCA, "system:kube-scheduler"),
		// kube-proxy's: its DaemonSet now authenticates with its pod's
		// service-account token (kube-proxy.yaml), so it runs on workers
		// too, which hold no such identity.
		retired(client(KubeProxy, ClusterCA, "system:kube-proxy", "system:node-proxier")),
		nodeClient(KubeletClient, ClusterCA),
		serving(KubeletServing, ClusterCA, PhaseFetch, kubeletSANs, x509.ExtKeyUsageServerAuth),
		// Taints a control-plane node while a pool has a Ready worker
		// (exk8s-control-plane-taint.sh): RBAC gives it nodes' get, list
		// and patch, and GET /metrics (the health report's deprecated
		// APIs), nothing else (control-plane-rbac.yaml).
		client(ControlPlaneTaint, ClusterCA, "exk8s:control-plane-taint"),

		// The operator's static admin kubeconfig (--static): short-lived
		// and issued anew on request (Issuer.LeafLifetime is the request's
		// ttl), never to a node. Its common name is who asked
		// (Subject.Name), so the API server's audit log says whose issue a
		// request came with.
		operatorAdmin(OperatorAdmin, OperatorAdminLifetime),
		// The operator's exec credential (k8sapi credential): the same
		// identity over a key the operator's machine made, living 15
		// minutes, asked for again with the operator's token each time it
		// expires, so a revoked token ends the operator's access.
		fixedLifetime(operatorAdmin(OperatorCredential, OperatorCredentialLifetime)),
	}
}

func rootCA(name Name, cn string) Spec {
	return Spec{Name: name, Phase: PhaseRoot, IsCA: true, Lifetime: caLifetime, CommonName: fixed(cn)}
}

func newOnRestore(s Spec) Spec {
	s.NewOnRestore = true
	return s
}

func client(name, signer Name, cn string, orgs ...string) Spec {
	return Spec{
		Name: name, Phase: PhaseFetch, Signer: signer, Lifetime: leafLifetime,
		CommonName: fixed(cn), Organization: orgs,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// organization is the subject's O= of spec's certificate for n.
func (s Spec) organization(n Subject) []string {
	if s.Phase == PhaseOperator && n.AdminGroup != "" {
		return []string{n.AdminGroup}
	}
	return s.Organization
}

func operatorAdmin(name Name, lifetime time.Duration) Spec {
	s := client(name, ClusterCA, "", ClusterAdminsGroup)
	s.Phase, s.Lifetime = PhaseOperator, lifetime
	s.CommonName = func(who Subject) string { return who.Name }
	return s
}

func fixedLifetime(s Spec) Spec {
	s.FixedLifetime = true
	return s
}

func retired(s Spec) Spec {
	s.Phase = PhaseRetired
	return s
}

func initialOnly(s Spec) Spec {
	s.InitialOnly = true
	return s
}

// nodeClient is the kubelet's identity for the Node authorizer:
// system:node:<name> in system:nodes.
func nodeClient(name, signer Name) Spec {
	s := client(name, signer, "", "system:nodes")
	s.CommonName = func(n Subject) string { return "system:node:" + n.Name }
	return s
}

func serving(name, signer Name, phase Phase, sans func(Subject) ([]string, []net.IP), usages ...x509.ExtKeyUsage) Spec {
	return Spec{
		Name: name, Phase: phase, Signer: signer, Lifetime: leafLifetime,
		CommonName: func(n Subject) string { return n.Name }, Usages: usages, SANs: sans,
	}
}

func fixed(cn string) func(Subject) string { return func(Subject) string { return cn } }

func etcdSANs(n Subject) ([]string, []net.IP) {
	return []string{n.Name, "localhost"}, nodeIPs(n, net.IPv4(127, 0, 0, 1))
}

// apiserverSANs covers every real access path: the node's own name, the
// shared control-plane name, the in-cluster service names (the last under
// the cluster's own domain), the first service IP, the node's addresses and
// loopback.
func apiserverSANs(n Subject) ([]string, []net.IP) {
	dns := []string{n.Name, n.ControlPlaneDNSName, "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	if n.ClusterDomain != "" { // every cluster row has one; a bare "...svc." would be no name at all
		dns = append(dns, "kubernetes.default.svc."+n.ClusterDomain)
	}
	dns = append(dns, "localhost")
	extra := []net.IP{net.IPv4(127, 0, 0, 1)}
	if n.ServiceIP != nil {
		extra = append(extra, n.ServiceIP)
	}
	return dns, nodeIPs(n, extra...)
}

func kubeletSANs(n Subject) ([]string, []net.IP) {
	return []string{n.Name}, nodeIPs(n)
}

// nodeIPs returns the node's non-empty, parseable addresses after extra.
func nodeIPs(n Subject, extra ...net.IP) []net.IP {
	ips := append([]net.IP(nil), extra...)
	for _, s := range []string{n.IPv4, n.IPv6, n.PublicIPv4} {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	return ips
}

// Renewable lists the leaves a node renews, in table order: every leaf a
// node is issued but the bootstrap-only (InitialOnly) ones. A node
// bootstrapped before a leaf was retired renews that one too
// (Names(PhaseRetired)).
func Renewable() []Name {
	var out []Name
	for _, s := range CertList() {
		if (s.Phase == PhaseFounding || s.Phase == PhaseFetch) && !s.InitialOnly {
			out = append(out, s.Name)
		}
	}
	return out
}

// Lookup returns the spec with the given name.
func Lookup(name Name) (Spec, bool) {
	for _, s := range CertList() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names returns the names of the specs of one phase, in table order.
func Names(phase Phase) []Name {
	var out []Name
	for _, s := range CertList() {
		if s.Phase == phase {
			out = append(out, s.Name)
		}
	}
	return out
}

// IssuedTo returns the names of one phase a node gets, in table order:
// every spec of the phase, less the InitialOnly ones unless it is initial.
func IssuedTo(phase Phase, initial bool) []Name {
	var out []Name
	for _, s := range CertList() {
		if s.Phase == phase && (initial || !s.InitialOnly) {
			out = append(out, s.Name)
		}
	}
	return out
}
