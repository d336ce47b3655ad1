package pki

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"
)

var testNode = Subject{
	Name:                "cp-1.cluster-42.internal",
	ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in",
	ClusterDomain:       "cluster.local",
	IPv4:                "10.0.1.5",
	PublicIPv4:          "203.0.113.9",
	ServiceIP:           net.ParseIP("10.96.0.1"),
}

func TestCertListRules(t *testing.T) {
	seen := map[Name]bool{}
	for _, s := range CertList() {
		if seen[s.Name] {
			t.Errorf("%s: duplicate name", s.Name)
		}
		if s.IsCA != (s.Phase == PhaseRoot) {
			t.Errorf("%s: only roots may be CAs", s.Name)
		}
		if !s.IsCA {
			parent, ok := Lookup(s.Signer)
			switch {
			case !ok:
				t.Errorf("%s: signer %q is not in the table", s.Name, s.Signer)
			case !parent.IsCA:
				t.Errorf("%s: signer %q is not a CA", s.Name, s.Signer)
			case !seen[s.Signer]:
				t.Errorf("%s: signer %q must come before it", s.Name, s.Signer)
			}
			if len(s.Usages) == 0 {
				t.Errorf("%s: leaf without extended key usage", s.Name)
			}
		}
		if s.Lifetime <= 0 {
			t.Errorf("%s: lifetime must be explicit", s.Name)
		}
		seen[s.Name] = true
	}
}

func TestIssuedChainsAndIdentities(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	is := Issuer{Algorithm: ECDSAP256, Now: func() time.Time { return now }}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	want := map[Name]struct {
		cn  string
		org []string
		ca  Name
	}{
		Admin:                  {"cluster-admin", []string{"system:masters"}, ClusterCA},
		APIServerEtcdClient:    {"kube-apiserver-etcd-client", nil, EtcdCA},
		APIServerKubeletClient: {"kube-apiserver-kubelet-client", nil, ClusterCA},
		FrontProxyClient:       {"front-proxy-client", nil, FrontProxyCA},
		ControllerManager:      {"system:kube-controller-manager", nil, ClusterCA},
		Scheduler:              {"system:kube-scheduler", nil, ClusterCA},
		KubeProxy:              {"system:kube-proxy", []string{"system:node-proxier"}, ClusterCA},
		KubeletClient:          {"system:node:cp-1.cluster-42.internal", []string{"system:nodes"}, ClusterCA},
		KubeletServing:         {"cp-1.cluster-42.internal", nil, ClusterCA},
		EtcdPeer:               {"cp-1.cluster-42.internal", nil, EtcdCA},
		APIServer:              {"cp-1.cluster-42.internal", nil, ClusterCA},
	}
	for name, w := range want {
		kp, err := is.Issue(trust, name, testNode)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cert, err := ParseCert(kp.CertPEM)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cert.Subject.CommonName != w.cn || !slices.Equal(cert.Subject.Organization, w.org) {
			t.Errorf("%s: subject %v, want CN=%s O=%v", name, cert.Subject, w.cn, w.org)
		}
		if !cert.NotBefore.Equal(now.Add(-5*time.Minute)) || !cert.NotAfter.Equal(now.Add(365*24*time.Hour)) {
			t.Errorf("%s: validity %v..%v", name, cert.NotBefore, cert.NotAfter)
		}
		for _, other := range []Name{ClusterCA, EtcdCA, FrontProxyCA} {
			pool := x509.NewCertPool()
			pool.AddCert(trust.CAs[other].Cert)
			_, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			if (err == nil) != (other == w.ca) {
				t.Errorf("%s verified by %s: err=%v, want signer %s", name, other, err, w.ca)
			}
		}
		if _, err := ParseKey(kp.KeyPEM); err != nil {
			t.Errorf("%s key: %v", name, err)
		}
	}
}

func TestAPIServerServesEveryAccessPath(t *testing.T) {
	is := Issuer{Algorithm: ECDSAP256}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	kp, err := is.Issue(trust, APIServer, testNode)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCert(kp.CertPEM)
	pool := x509.NewCertPool()
	pool.AddCert(trust.CAs[ClusterCA].Cert)
	for _, host := range []string{"cp-1.cluster-42.internal", "exk8s-7-2a.k8s.excloud.co.in", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", "10.96.0.1", "10.0.1.5", "203.0.113.9", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("apiserver cert for %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "cp-2.cluster-42.internal", Roots: pool}); err == nil {
		t.Error("apiserver cert must not serve another node's name")
	}
}

// The in-cluster FQDN is under the cluster's own domain, not a fixed one.
func TestAPIServerNamesTheClusterDomain(t *testing.T) {
	is := Issuer{Algorithm: ECDSAP256}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	n := testNode
	n.ClusterDomain = "corp.example"
	kp, err := is.Issue(trust, APIServer, n)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCert(kp.CertPEM)
	if !slices.Contains(cert.DNSNames, "kubernetes.default.svc.corp.example") || slices.Contains(cert.DNSNames, "kubernetes.default.svc.cluster.local") {
		t.Errorf("DNS SANs %v: want kubernetes.default.svc.corp.example and no cluster.local", cert.DNSNames)
	}
}

func TestRSAModeUsesRSAEverywhere(t *testing.T) {
	is := Issuer{Algorithm: RSA2048}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := trust.ServiceAccount.(*rsa.PrivateKey); !ok {
		t.Errorf("service-account key is %T", trust.ServiceAccount)
	}
	kp, err := is.Issue(trust, Admin, testNode)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ParseKey(kp.KeyPEM)
	if _, ok := key.(*rsa.PrivateKey); !ok {
		t.Errorf("admin key is %T", key)
	}
	cert, _ := ParseCert(trust.CAs[ClusterCA].CertPEM)
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Error("CA cannot sign certificates")
	}
}

func TestLoadCARoundTripAndMismatch(t *testing.T) {
	is := Issuer{}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	ca := trust.CAs[ClusterCA]
	keyPEM, _ := EncodeKey(ca.Key)
	loaded, err := LoadCA(ca.CertPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.Key.(*ecdsa.PrivateKey); !ok {
		t.Errorf("loaded key is %T", loaded.Key)
	}
	otherKey, _ := EncodeKey(trust.CAs[EtcdCA].Key)
	if _, err := LoadCA(ca.CertPEM, otherKey); err == nil {
		t.Error("LoadCA accepted a key of another CA")
	}
}

func TestParseAlgorithm(t *testing.T) {
	for in, want := range map[string]Algorithm{"": ECDSAP256, "ecdsa-p256": ECDSAP256, "rsa-2048": RSA2048} {
		if got, err := ParseAlgorithm(in); err != nil || got != want {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseAlgorithm("rsa-1024"); err == nil {
		t.Error("rsa-1024 accepted")
	}
}

// The operator's admin identity names who asked (its CN is the subject's
// name), is in k8sapi's cluster-admins group (never system:masters), lives what the issuer is told (the request's
// ttl; the table's 12 h otherwise), and is no node's: no phase a node is
// issued, never renewed.
func TestOperatorAdminIdentity(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	is := Issuer{Algorithm: ECDSAP256, Now: func() time.Time { return now }}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lifetime, want time.Duration
	}{{0, 12 * time.Hour}, {30 * time.Minute, 30 * time.Minute}, {168 * time.Hour, 168 * time.Hour}} {
		is.LeafLifetime = c.lifetime
		kp, err := is.Issue(trust, OperatorAdmin, Subject{Name: "k8sapi:org:7:token:5e884898da28"})
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := ParseCert(kp.CertPEM)
		if cert.Subject.CommonName != "k8sapi:org:7:token:5e884898da28" || !slices.Equal(cert.Subject.Organization, []string{"k8sapi:cluster-admins"}) {
			t.Errorf("subject %v", cert.Subject)
		}
		if !cert.NotAfter.Equal(now.Add(c.want)) || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("lifetime %v: valid until %v, usages %v", c.lifetime, cert.NotAfter, cert.ExtKeyUsage)
		}
		pool := x509.NewCertPool()
		pool.AddCert(trust.CAs[ClusterCA].Cert)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("not signed by the cluster CA: %v", err)
		}
	}
	for _, name := range []Name{OperatorAdmin, OperatorCredential} {
		for _, initial := range []bool{true, false} {
			for _, phase := range []Phase{PhaseFounding, PhaseFetch} {
				if slices.Contains(IssuedTo(phase, initial), name) {
					t.Errorf("a node (initial %v) is issued the operator's %s in phase %v", initial, name, phase)
				}
			}
		}
		if slices.Contains(Renewable(), name) {
			t.Errorf("the operator's %s is renewable", name)
		}
	}
}

// The operator's exec credential is the admin identity over the
// operator's own key, living 15 minutes whatever the issuer is told: the
// bound on how long a revoked token keeps its cluster access.
func TestOperatorCredentialIdentity(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	is := Issuer{Algorithm: ECDSAP256, Now: func() time.Time { return now }}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	key, err := GenerateKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	for _, lifetime := range []time.Duration{0, 12 * time.Hour, 168 * time.Hour} {
		is.LeafLifetime = lifetime
		certPEM, err := is.Reissue(trust, OperatorCredential, Subject{Name: "k8sapi:org:7:token:5e884898da28"}, key.Public())
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := ParseCert(certPEM)
		if cert.Subject.CommonName != "k8sapi:org:7:token:5e884898da28" || !slices.Equal(cert.Subject.Organization, []string{ClusterAdminsGroup}) {
			t.Errorf("subject %v", cert.Subject)
		}
		if !cert.NotAfter.Equal(now.Add(15*time.Minute)) || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("issuer lifetime %v: valid until %v, usages %v; want 15 minutes, client auth", lifetime, cert.NotAfter, cert.ExtKeyUsage)
		}
		if !publicKeysEqual(cert.PublicKey, key.Public()) {
			t.Error("the credential is not over the operator's key")
		}
	}
}

// system:masters, which no authorizer can refuse, is held by the initial
// node's addons identity only, for its bootstrap window: never renewed,
// never an operator's.
func TestSystemMastersIsTheInitialNodesAddonsOnly(t *testing.T) {
	for _, s := range CertList() {
		if !slices.Contains(s.Organization, "system:masters") {
			continue
		}
		if s.Name != Admin || !s.InitialOnly || slices.Contains(Renewable(), s.Name) {
			t.Errorf("%s is system:masters (initial only %v)", s.Name, s.InitialOnly)
		}
	}
}
