package gobench

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
)

var algorithms = []pki.Algorithm{pki.ECDSAP256, pki.RSA2048}

// fakeKMS hands out data keys in process: the benchmarks measure CPU, not KMS.
type fakeKMS struct{ plain []byte }

func newFakeKMS() *fakeKMS {
	p := make([]byte, 32)
	_, _ = rand.Read(p)
	return &fakeKMS{plain: p}
}

func (k *fakeKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return &kms.GenerateDataKeyOutput{Plaintext: append([]byte(nil), k.plain...), CiphertextBlob: []byte("wrapped")}, nil
}

func (k *fakeKMS) Decrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return &kms.DecryptOutput{Plaintext: append([]byte(nil), k.plain...)}, nil
}

type topologies struct{ topo store.Topology }

func (t topologies) TopologyForVM(context.Context, int64) (store.Topology, error) { return t.topo, nil }

// RecordFetch records nothing: the benchmark is the fetch's CPU, not its
// database round trips. It keeps no window identities and the node stays
// pending, so every fetch is a window's first: the costliest, the one that issues them. It answers that
// it stored them (and moved the node), as the store would.
func (topologies) RecordFetch(context.Context, store.FetchWrites) (store.FetchWritten, error) {
	return store.FetchWritten{WindowStored: true, Phase: store.PhaseOutcome{ClusterStatus: store.StatusActive, Moved: true}}, nil
}

// founded seals a 3-node cluster's trust and node keys like founding does and
// returns the stored topology as the database would hand it back for vm 101
// just after founding: every node pending (the column's default) with its
// bootstrap window opened then, so the fetch passes the window check and
// records bundle_fetched like a VM's first.
func founded(b *testing.B, alg pki.Algorithm, env *envelope.Envelope) store.Topology {
	b.Helper()
	ctx := context.Background()
	c := store.Cluster{ID: 42, OrgID: 7, Name: "exk8s-7-2a", ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in",
		Status: store.StatusActive, KeyAlgorithm: string(alg), KubernetesVersion: "v1.35.4",
		ClusterDomain: "cluster.local", ServiceCIDR: "10.96.0.0/12", PodCIDR: "172.16.0.0/12", CNI: "cilium", ControlPlaneCount: 3}
	is := pki.Issuer{Algorithm: alg}
	trust, err := is.NewTrust()
	if err != nil {
		b.Fatal(err)
	}
	dk, err := env.NewDataKey(ctx, keyring.Scope(&c))
	if err != nil {
		b.Fatal(err)
	}
	c.WrappedDataKey, c.KMSKeyID = dk.Wrapped, dk.KeyID
	if err := keyring.SealTrust(dk, trust, &c); err != nil {
		b.Fatal(err)
	}
	topo := store.Topology{Cluster: c}
	openedAt := time.Now()
	for i, ip := range []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"} {
		n := store.Node{ClusterID: c.ID, VMID: int64(101 + i), CreateRequested: true, Ordinal: i + 1,
			Name: []string{"cp-1.cluster-42.internal", "cp-2.cluster-42.internal", "cp-3.cluster-42.internal"}[i], IPv4: ip,
			Issued: true, Phase: string(clusterfacts.Pending), PhaseUpdatedAt: openedAt, BootstrapOpenedAt: openedAt}
		cf, _, err := clusterfacts.FromRows(&c, nil)
		if err != nil {
			b.Fatal(err)
		}
		facts, err := cf.CertSubject(clusterfacts.NodeOf(n))
		if err != nil {
			b.Fatal(err)
		}
		issued, err := is.IssuePhase(trust, pki.PhaseFounding, facts)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 { // only the asking node's identities are loaded
			if n.Identities, err = keyring.SealIdentities(dk, n.VMID, issued); err != nil {
				b.Fatal(err)
			}
		}
		topo.Nodes = append(topo.Nodes, n)
	}
	return topo
}

// BenchmarkBundle is one bundle fetch after auth and the topology query, on
// a warm container (the data key cached, as in the load test): open the
// sealed CA and node keys, mint every fetch-phase client certificate fresh
// (pki.Issuer.IssuePhase) and render every template (bundle.Renderer.Render).
func BenchmarkBundle(b *testing.B) {
	r, err := bundle.NewRenderer()
	if err != nil {
		b.Fatal(err)
	}
	for _, alg := range algorithms {
		b.Run("alg="+string(alg), func(b *testing.B) {
			env := envelope.New(newFakeKMS(), "bench", envelope.NewCache(time.Hour, 1<<30, 16))
			topo := topologies{founded(b, alg, env)}
			svc := &nodebootstrap.Service{Store: topo, Envelope: env, Renderer: r,
				Artifacts: artifacts.Default(), Window: progress.DefaultWindow}
			vm := auth.BootstrapVM{VMID: 101, OrgID: 7}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Bundle(ctx, vm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFoundTrust is the crypto of founding a 3-node cluster: the three
// CAs and the service-account key (NewTrust), then each node's etcd peer and
// API server serving certificates. Sealing is excluded.
func BenchmarkFoundTrust(b *testing.B) {
	nodes := []pki.Subject{
		{Name: "cp-1.cluster-42.internal", ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in", IPv4: "10.0.0.11"},
		{Name: "cp-2.cluster-42.internal", ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in", IPv4: "10.0.0.12"},
		{Name: "cp-3.cluster-42.internal", ControlPlaneDNSName: "exk8s-7-2a.k8s.excloud.co.in", IPv4: "10.0.0.13"},
	}
	for _, alg := range algorithms {
		b.Run("alg="+string(alg), func(b *testing.B) {
			is := pki.Issuer{Algorithm: alg}
			b.ReportAllocs()
			for b.Loop() {
				t, err := is.NewTrust()
				if err != nil {
					b.Fatal(err)
				}
				for _, n := range nodes {
					for _, name := range pki.Names(pki.PhaseFounding) {
						if _, err := is.Issue(t, name, n); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// BenchmarkSealOpen seals and opens one private key PEM of the algorithm
// under a cluster data key (AES-256-GCM, no KMS call).
func BenchmarkSealOpen(b *testing.B) {
	for _, alg := range algorithms {
		b.Run("alg="+string(alg), func(b *testing.B) {
			env := envelope.New(newFakeKMS(), "bench", nil)
			dk, err := env.NewDataKey(context.Background(), envelope.Scope{OrgID: 7, ClusterID: 42})
			if err != nil {
				b.Fatal(err)
			}
			key, err := pki.GenerateKey(alg)
			if err != nil {
				b.Fatal(err)
			}
			keyPEM, err := pki.EncodeKey(key)
			if err != nil {
				b.Fatal(err)
			}
			p := envelope.Purpose{Name: "apiserver-key", VMID: 101}
			b.SetBytes(int64(len(keyPEM)))
			b.ReportAllocs()
			for b.Loop() {
				sealed, err := dk.Seal(p, keyPEM)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := dk.Open(p, sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
