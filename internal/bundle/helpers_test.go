package bundle

import (
	"crypto/x509"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

var update = flag.Bool("update", false, "rewrite golden files and fixture PEMs under testdata")

// testCluster is the fixed 3-node cluster of the golden tests.
func testCluster() (clusterfacts.Cluster, []clusterfacts.Node) {
	c := clusterfacts.Cluster{
		OrgID: 7, ID: 42, Name: "exk8s-7-2a",
		ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in",
		KubernetesVersion:   "v1.35.4", ClusterDomain: "cluster.local",
		ServiceCIDR: "10.96.0.0/12", PodCIDR: "172.16.0.0/12", CNI: clusterfacts.CNICilium,
	}
	// Listed out of ordinal order on purpose: the renderer sorts.
	nodes := []clusterfacts.Node{
		{VMID: 102, Ordinal: 2, Name: "cp-2.cluster-42.internal", IPv4: "10.0.0.12", PublicIPv4: "203.0.113.12"},
		{VMID: 101, Ordinal: 1, Name: "cp-1.cluster-42.internal", IPv4: "10.0.0.11", IPv6: "fd00::11", PublicIPv4: "203.0.113.11"},
		{VMID: 103, Ordinal: 3, Name: "cp-3.cluster-42.internal", IPv4: "10.0.0.13"},
	}
	return c, nodes
}

// bridgeCluster is the test cluster under the bridge CNI.
func bridgeCluster() (clusterfacts.Cluster, []clusterfacts.Node) {
	c, nodes := testCluster()
	c.CNI = clusterfacts.CNIBridge
	return c, nodes
}

// flannelCluster is the test cluster under the flannel CNI.
func flannelCluster() (clusterfacts.Cluster, []clusterfacts.Node) {
	c, nodes := testCluster()
	c.CNI = clusterfacts.CNIFlannel
	return c, nodes
}

func pkiNode(c clusterfacts.Cluster, n clusterfacts.Node) pki.Subject {
	facts, err := c.CertSubject(n)
	if err != nil {
		panic(err)
	}
	return facts
}

// clusterPKI is a cluster's trust plus every node's identities, issued by
// the real pki package.
type clusterPKI struct {
	trust      *pki.Trust
	saKey      []byte
	saPub      []byte
	identities map[int64]map[pki.Name]pki.KeyPair
}

func issueClusterPKI(t testing.TB, c clusterfacts.Cluster, nodes []clusterfacts.Node, now func() time.Time) *clusterPKI {
	t.Helper()
	is := pki.Issuer{Algorithm: pki.ECDSAP256, Now: now}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := pki.EncodeKey(trust.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	saPub, err := pki.EncodePublicKey(trust.ServiceAccount.Public())
	if err != nil {
		t.Fatal(err)
	}
	cp := &clusterPKI{trust: trust, saKey: saKey, saPub: saPub, identities: map[int64]map[pki.Name]pki.KeyPair{}}
	for _, n := range nodes {
		ids := map[pki.Name]pki.KeyPair{}
		for _, name := range RequiredIdentities(true) {
			kp, err := is.Issue(trust, name, pkiNode(c, n))
			if err != nil {
				t.Fatal(err)
			}
			ids[name] = kp
		}
		cp.identities[n.VMID] = ids
	}
	return cp
}

func (cp *clusterPKI) input(c clusterfacts.Cluster, nodes []clusterfacts.Node, self int64) Input {
	cas := map[pki.Name][]byte{}
	for name, ca := range cp.trust.CAs {
		cas[name] = ca.CertPEM
	}
	return Input{
		Cluster: c, Nodes: nodes, SelfVMID: self, Artifacts: artifacts.Default(),
		CACerts: cas, ServiceAccountKeyPEM: cp.saKey, ServiceAccountPubPEM: cp.saPub,
		Identities: cp.identities[self], SecretsEncryptionKey: cp.trust.SecretsEncryptionKey,
		EtcdCRLPEM: cp.crl(nil, 0),
	}
}

// crl is a CRL of number listing serials (hex), signed by the cluster's
// etcd CA.
func (cp *clusterPKI) crl(serials []string, number int64) []byte {
	var revoked []pki.Revoked
	for _, s := range serials {
		revoked = append(revoked, pki.Revoked{Serial: s, RevokedAt: time.Now()})
	}
	p, err := pki.SignCRL(cp.trust.CAs[pki.EtcdCA], number, revoked, time.Now())
	if err != nil {
		panic(err) // the test's own CA: a failure is a bug in pki
	}
	return p
}

func (cp *clusterPKI) caPool(name pki.Name) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(cp.trust.CAs[name].Cert)
	return pool
}

// fixtureFile is the checked-in PEM fixture set of the golden tests: the
// pki package signs with randomized ECDSA, so goldens need fixed bytes.
const fixtureFile = "testdata/fixtures.json"

// fixtureSecretsKey is the golden bundles' Secrets encryption key: fixed
// bytes, as the goldens need, and obviously not random.
var fixtureSecretsKey = []byte("exk8s-golden-secretbox-key-32byt")

// fixtureClock is the fixed clock the fixture certificates were issued at.
var fixtureClock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixtures struct {
	CACerts    map[pki.Name]string                   `json:"ca_certs"`
	SAKey      string                                `json:"service_account_key"`
	SAPub      string                                `json:"service_account_pub"`
	Identities map[int64]map[pki.Name]fixtureKeyPair `json:"identities"`
	// EtcdCRL is the goldens' CRL: fixed bytes, as the goldens need (the
	// script tests install CRLs the live etcd CA signs).
	EtcdCRL string `json:"etcd_crl"`
}

type fixtureKeyPair struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// loadFixtures reads the fixture PEMs, regenerating them under -update.
func loadFixtures(t testing.TB) fixtures {
	t.Helper()
	if *update {
		if _, err := os.Stat(fixtureFile); err != nil {
			writeFixtures(t)
		}
	}
	raw, err := os.ReadFile(fixtureFile)
	if err != nil {
		t.Fatalf("reading fixtures (run go test ./internal/bundle -update to create them): %v", err)
	}
	var f fixtures
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeFixtures issues a fresh PKI with a fixed clock and stores its PEMs.
// It only runs when the fixture file is absent: delete it to rotate.
func writeFixtures(t testing.TB) {
	t.Helper()
	c, nodes := testCluster()
	cp := issueClusterPKI(t, c, nodes, func() time.Time { return fixtureClock })
	crl, err := pki.SignCRL(cp.trust.CAs[pki.EtcdCA], 0, nil, fixtureClock)
	if err != nil {
		t.Fatal(err)
	}
	f := fixtures{CACerts: map[pki.Name]string{}, SAKey: string(cp.saKey), SAPub: string(cp.saPub),
		Identities: map[int64]map[pki.Name]fixtureKeyPair{}, EtcdCRL: string(crl)}
	for name, ca := range cp.trust.CAs {
		f.CACerts[name] = string(ca.CertPEM)
	}
	for vm, ids := range cp.identities {
		f.Identities[vm] = map[pki.Name]fixtureKeyPair{}
		for name, kp := range ids {
			f.Identities[vm][name] = fixtureKeyPair{Cert: string(kp.CertPEM), Key: string(kp.KeyPEM)}
		}
	}
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fixtureFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureFile, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f fixtures) input(c clusterfacts.Cluster, nodes []clusterfacts.Node, self int64) Input {
	in := Input{
		Cluster: c, Nodes: nodes, SelfVMID: self, Artifacts: artifacts.Default(),
		CACerts: map[pki.Name][]byte{}, ServiceAccountKeyPEM: []byte(f.SAKey), ServiceAccountPubPEM: []byte(f.SAPub),
		Identities: map[pki.Name]pki.KeyPair{}, SecretsEncryptionKey: fixtureSecretsKey, EtcdCRLPEM: []byte(f.EtcdCRL),
	}
	for name, pem := range f.CACerts {
		in.CACerts[name] = []byte(pem)
	}
	for name, kp := range f.Identities[self] {
		in.Identities[name] = pki.KeyPair{CertPEM: []byte(kp.Cert), KeyPEM: []byte(kp.Key)}
	}
	return in
}

func newTestRenderer(t testing.TB) *Renderer {
	t.Helper()
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
