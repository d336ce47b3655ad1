package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// The fleet's shape (issue 42): every cluster has 3 control-plane nodes and
// one pool of 3 workers, so 10,000 clusters are 60,000 nodes, spread over
// 100 orgs; each has its last hours' etcd snapshots, a bundle fetch per
// node and a few audit events.
const (
	fleetOrgs          = 100
	fleetControlPlanes = 3
	fleetWorkers       = 3
	fleetSnapshots     = 4 // hourly, the newest within the last hour
	fleetAuditEvents   = 3
	// fleetSpread is how the clusters' newest snapshots spread over the
	// hour before t0: cluster i's is fleetOffset(i) old at t0, so nothing
	// is due at t0 and the oldest 1% is due 36 s later.
	fleetSpread = time.Hour
	seedOwner   = "k8sapi-bench-seed"
	seedWorkers = 12 // concurrent seeders: 2 cores, Postgres is the other half
)

// fleet is the seeded fleet: which clusters, nodes and VMs exist, and the
// clock everything was seeded against (t0: "now" of a sweep with nothing
// due).
type fleet struct {
	st       *store.Store
	t0       time.Time
	size     int // the offsets' permutation is over this many clusters
	clusters []seeded
}

// seeded is one cluster as the benchmark later names it.
type seeded struct {
	index     int
	id, org   int64
	poolID    int64
	cpVMs     []int64
	workerVMs []int64
}

// fleetOffset is how old cluster i's newest snapshot is at t0: a
// permutation of [0, size) scaled to the spread, so any prefix of the
// fleet is spread over the whole hour too.
func fleetOffset(i, size int) time.Duration {
	const stride = 7919 // prime, so i*stride mod size is a permutation when size is not its multiple
	return time.Duration(int64(i*stride%size) * int64(fleetSpread) / int64(size))
}

// seed adds clusters [len(f.clusters), n) to the fleet, each through the
// store's own statements as founding, pools, fetches and the audit trail
// make them, then their snapshot history. It returns how long it took.
func (f *fleet) seed(ctx context.Context, n int) (time.Duration, error) {
	start := time.Now()
	from := len(f.clusters)
	added := make([]seeded, n-from)
	err := parallel(ctx, len(added), func(ctx context.Context, i int) error {
		var err error
		added[i], err = f.seedCluster(ctx, from+i)
		return err
	})
	if err != nil {
		return 0, err
	}
	f.clusters = append(f.clusters, added...)
	log.Printf("fleet: %d clusters founded, pooled, booted and audited in %s", len(added), time.Since(start).Round(100*time.Millisecond))
	if err := f.seedSnapshots(ctx, added); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// seedCluster founds cluster i, gives it a pool, fetches each node's
// bundle and reports it ready, and writes its audit events.
func (f *fleet) seedCluster(ctx context.Context, i int) (seeded, error) {
	c := seeded{index: i, org: int64(i%fleetOrgs + 1)}
	id, err := f.st.ReserveClusterID(ctx)
	if err != nil {
		return c, err
	}
	c.id = id
	for _, step := range []func(context.Context, *seeded) error{f.found, f.addPool, f.bootNodes, f.audit} {
		if err := step(ctx, &c); err != nil {
			return c, fmt.Errorf("seeding cluster %d: %w", i, err)
		}
	}
	return c, nil
}

// vmID is a made-up VM id, unique in the fleet: no compute API is asked.
func vmID(cluster, ordinal int) int64 { return int64(1_000_000 + cluster*10 + ordinal) }

// filler is n bytes standing in for a sealed key: sizes matter to the
// plans (TOAST, pages per row), contents do not.
func filler(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }

// seedCertPEM is one real ECDSA CA certificate that stands in for every
// certificate of the fleet: the store records each certificate's serial
// (migration 022 checks it is hex) and the views parse the CAs' expiry, so a
// filler would skip work a real fleet does.
var seedCertPEM = sync.OnceValues(func() (string, error) {
	t, err := pki.Issuer{Algorithm: pki.ECDSAP256}.NewTrust()
	if err != nil {
		return "", err
	}
	return string(t.CAs[pki.ClusterCA].CertPEM), nil
})

// found runs a founding's store statements: begin, VMs recorded,
// addresses, identities, finish.
func (f *fleet) found(ctx context.Context, c *seeded) error {
	key := fmt.Sprintf("fleet-%d", c.index)
	pem, err := seedCertPEM()
	if err != nil {
		return err
	}
	sealed := filler(200)
	cl := store.Cluster{ID: c.id, OrgID: c.org, ProjectID: 1, Name: key,
		ControlPlaneDNSName: key + ".k8s.bench.example", KeyAlgorithm: "ecdsa-p256", KubernetesVersion: "1.31.4",
		ClusterDomain: "cluster.local", ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.0.0/16", CNI: "flannel",
		ControlPlaneCount: fleetControlPlanes, SecurityGroupIDs: []int64{}, KMSKeyID: "bench", WrappedDataKey: filler(184),
		CACert: pem, CAKeySealed: sealed, EtcdCACert: pem, EtcdCAKeySealed: sealed, FrontProxyCACert: pem,
		FrontProxyCAKeySealed: sealed, ServiceAccountPub: pem, ServiceAccountKeySealed: sealed, IdempotencyKey: &key,
		FoundingSpec: []byte(`{}`), CreateTokenKey: filler(32), SecretsEncryptionKeySealed: sealed}
	nodes := make([]store.Node, fleetControlPlanes)
	vms := map[int]int64{}
	for k := range nodes {
		o := k + 1
		vms[o] = vmID(c.index, o)
		nodes[k] = store.Node{Ordinal: o, Name: fmt.Sprintf("%s-cp-%d", key, o), IPv4: fmt.Sprintf("10.0.%d.%d", c.index%250, o),
			Identities: seedIdentities(pem, sealed, f.t0)}
		c.cpVMs = append(c.cpVMs, vms[o])
	}
	fence := store.ClusterLease(c.id, seedOwner)
	// No MarkVMsRequested: RecordVMs marks the creates it records as
	// requested, and the seed asks no compute API.
	steps := []func() error{
		func() error {
			return f.st.BeginFounding(ctx, cl, nodes, store.Lease{Owner: seedOwner, Until: f.t0.Add(time.Minute)})
		},
		func() error { return f.st.RecordVMs(ctx, fence, vms, nil) },
		func() error { return f.st.RecordAddresses(ctx, fence, nodes) },
		func() error { return f.st.RecordIdentities(ctx, c.id, seedOwner, nodes) },
		func() error { return f.st.FinishFounding(ctx, c.id, seedOwner) },
	}
	return runAll(steps)
}

// seedIdentities are a control-plane node's stored identities as founding
// writes them (etcd peer and server, API server serving and kubelet
// client), a year from t0.
func seedIdentities(pem string, sealed []byte, t0 time.Time) []store.Identity {
	var out []store.Identity
	for _, name := range []string{"apiserver", "etcd-peer", "etcd-server", "apiserver-kubelet-client"} {
		out = append(out, store.Identity{Name: name, Cert: pem, KeySealed: sealed, NotAfter: t0.AddDate(1, 0, 0)})
	}
	return out
}

func runAll(steps []func() error) error {
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// addPool runs a pool create's store statements: begin, VMs recorded,
// addresses, settle active.
func (f *fleet) addPool(ctx context.Context, c *seeded) error {
	p, err := f.st.BeginPoolOperation(ctx, store.PoolChange{OrgID: c.org,
		Pool: store.Pool{ClusterID: c.id, Name: "workers", Count: fleetWorkers, InstanceType: "m5.large", ImageID: 1,
			SubnetID: 1, Labels: map[string]string{}, Taints: []store.Taint{}},
		State: store.PoolCreating, Lease: store.Lease{Owner: seedOwner, Until: f.t0.Add(time.Minute)}, Now: f.t0,
		Name: func(o int) string { return fmt.Sprintf("fleet-%d-w-%d", c.index, o) }})
	if err != nil {
		return err
	}
	c.poolID = p.ID
	fence := store.PoolLease(p.ID, seedOwner)
	var nodes []store.Node
	vms := map[int]int64{}
	for k := range fleetWorkers {
		o := fleetControlPlanes + k + 1
		vms[o] = vmID(c.index, o)
		nodes = append(nodes, store.Node{Ordinal: o, IPv4: fmt.Sprintf("10.1.%d.%d", c.index%250, o)})
		c.workerVMs = append(c.workerVMs, vms[o])
	}
	return runAll([]func() error{
		func() error { return f.st.RecordVMs(ctx, fence, vms, nil) },
		func() error { return f.st.RecordAddresses(ctx, fence, nodes) },
		func() error { return f.st.SettlePool(ctx, p.ID, seedOwner, store.PoolActive, "", nil) },
	})
}

// bootNodes records each node's first bundle fetch and its move from
// pending (one batch, as a fetch writes them), to ready at once: the
// phases between are reports like any other, and only where a node
// stands and when it became ready matter to what is measured.
func (f *fleet) bootNodes(ctx context.Context, c *seeded) error {
	boot := func(vm int64, role string) error {
		_, err := f.st.RecordFetch(ctx, store.FetchWrites{
			Fetch: store.Fetch{VMID: vm, RequestID: fmt.Sprintf("seed-%d", vm), Outcome: "served", FetchedAt: f.t0.Add(-2 * time.Hour)},
			Phase: &store.PhaseChange{VMID: vm, OrgID: c.org, Role: role, To: "ready", From: []string{"pending"}, MarksReady: true}})
		return err
	}
	for _, vm := range c.cpVMs {
		if err := boot(vm, store.RoleControlPlane); err != nil {
			return err
		}
	}
	for _, vm := range c.workerVMs {
		if err := boot(vm, store.RoleWorker); err != nil {
			return err
		}
	}
	return nil
}

// audit writes the trail a cluster's first day leaves: its create, its
// pool's, an admin kubeconfig.
func (f *fleet) audit(ctx context.Context, c *seeded) error {
	actions := []string{"cluster.create", "node_pool.create", "kubeconfig.issue"}
	for k := range fleetAuditEvents {
		_, err := f.st.RecordAudit(ctx, audit.Event{At: f.t0.Add(-time.Duration(3-k) * time.Hour), OrgID: c.org, ClusterID: c.id,
			Principal: fmt.Sprintf("org-%d-operator", c.org), Action: actions[k%len(actions)],
			Resource: fmt.Sprintf("clusters/%d", c.id), Outcome: audit.Succeeded, Status: 201, RequestID: fmt.Sprintf("seed-%d-%d", c.id, k)})
		if err != nil {
			return err
		}
	}
	return nil
}

// seedSnapshots gives clusters their history: fleetSnapshots hourly rounds
// of scheduled snapshots, each recorded in multi-row statements as the
// schedule records them and reported uploaded by its node, the newest
// fleetOffset old at t0. A newest one asked for under a minute before t0
// is left pending: its node has not reported yet.
func (f *fleet) seedSnapshots(ctx context.Context, clusters []seeded) error {
	for round := fleetSnapshots - 1; round >= 0; round-- {
		var want []store.EtcdSnapshot
		for _, c := range clusters {
			at := f.t0.Add(-fleetOffset(c.index, f.size) - time.Duration(round)*time.Hour)
			want = append(want, store.EtcdSnapshot{ClusterID: c.id, Trigger: store.SnapshotScheduled,
				RequestedBy: etcdsnapshot.ScheduledBy, NodeVMID: c.cpVMs[0], RequestedAt: at})
		}
		made, err := recordInChunks(ctx, f.st, want)
		if err != nil {
			return err
		}
		if err := f.uploadAll(ctx, clusters, made, f.t0.Add(-time.Minute)); err != nil {
			return err
		}
	}
	return nil
}

// recordInChunks records want 1,000 at a time (a statement's arrays stay
// a few hundred kilobytes).
func recordInChunks(ctx context.Context, st *store.Store, want []store.EtcdSnapshot) ([]store.EtcdSnapshot, error) {
	var made []store.EtcdSnapshot
	for len(want) > 0 {
		n := min(len(want), 1000)
		m, err := st.RecordEtcdSnapshots(ctx, want[:n])
		if err != nil {
			return nil, err
		}
		made, want = append(made, m...), want[n:]
	}
	return made, nil
}

// uploadAll reports each snapshot asked for before pendingAfter uploaded,
// as its node does.
func (f *fleet) uploadAll(ctx context.Context, clusters []seeded, made []store.EtcdSnapshot, pendingAfter time.Time) error {
	orgOf := map[int64]int64{}
	for _, c := range clusters {
		orgOf[c.id] = c.org
	}
	return parallel(ctx, len(made), func(ctx context.Context, i int) error {
		s := made[i]
		if !s.RequestedAt.Before(pendingAfter) {
			return nil
		}
		_, err := f.st.FinishEtcdSnapshot(ctx, store.SnapshotOutcome{ID: s.ID, VMID: s.NodeVMID, OrgID: orgOf[s.ClusterID],
			State: store.SnapshotUploaded, SizeBytes: 4 << 20, SHA256: fmt.Sprintf("%064x", s.ID), At: s.RequestedAt.Add(20 * time.Second)})
		return err
	})
}

// parallel runs do(0) … do(n-1) on seedWorkers goroutines and returns the
// first error; after one, the rest are skipped.
func parallel(ctx context.Context, n int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
