package usecase

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// Renderer renders what the use cases hand out: the VM userdata shim and
// the operator's admin kubeconfig (the same templates the bundle uses).
type Renderer interface {
	Userdata(bundle.UserdataInput) (string, error)
	Kubeconfig(bundle.KubeconfigInput) (string, error)
}

// Settings are the cluster defaults, the public names and the operations'
// time limits (zero: the Default* values).
type Settings struct {
	BaseDNSDomain     string // control-plane names live under it; also the DNS zone
	BootstrapBaseURL  string // rendered into the userdata shim
	KubernetesVersion string
	ServiceCIDR       string
	PodCIDR           string
	ClusterDomain     string
	// AnswerWithin: a request stops driving its operation after this and
	// answers 202; the reconciler carries on.
	AnswerWithin time.Duration
	// Lease: how long an API invocation holds the operation it drives. It
	// must outlast the function's timeout: a lease that ran out means the
	// holder is dead.
	Lease time.Duration
	// AddressPolls and AddressPollInterval bound the wait for a VM's
	// addresses.
	AddressPolls        int
	AddressPollInterval time.Duration
	LeafLifetime        time.Duration // zero: the cert table's
	// CADistrustWait is how long a CA rotation begun from now keeps the
	// old roots trusted after signing began (zero: the longest lifetime
	// the cluster allows, carotation.DefaultDistrustWait); tests shorten it.
	CADistrustWait time.Duration
	// DNSTTL is the TTL, in seconds, of the control-plane name's record
	// (CONTROL_PLANE_DNS_TTL_SECONDS; zero: clusterfacts.DNSRecordTTL): a
	// CA rotation waits it out after moving the name off a node before it
	// restarts that node (docs/CA-ROTATION.md).
	DNSTTL int
	// Artifacts is the configured artifact set with its manifest's pins;
	// a cluster records its part of it at founding.
	Artifacts artifacts.Set
}

// DefaultNetworks are the seed's cluster networks.
const (
	DefaultServiceCIDR   = "10.96.0.0/12"
	DefaultPodCIDR       = "172.16.0.0/12"
	DefaultClusterDomain = "cluster.local"
)

// Defaults of the operations' limits. The API functions time out after
// 29 s (template.yaml): the answer leaves room for the kubeconfig and the
// response, and the lease outlasts the function by a margin. An undo that
// runs after the request's context is gone is bounded by UndoTimeout: an
// orphan VM costs the customer money.
const (
	DefaultAnswerWithin        = 20 * time.Second
	DefaultLease               = 60 * time.Second
	DefaultAddressPolls        = 20
	DefaultAddressPollInterval = 500 * time.Millisecond
	DefaultRetryAfter          = time.Minute
	// DefaultLookAgain is how soon an operation waiting on the world (a
	// node to report ready, a DNS record's TTL to pass) is looked at
	// again: short of the reconciler's own schedule (10 s locally, a
	// minute on AWS), so the next run takes it. With a minute here every
	// wait cost one to two runs: about 2 minutes per control-plane node
	// of an upgrade on booted nodes, most of it idle.
	DefaultLookAgain = 5 * time.Second
	UndoTimeout      = 30 * time.Second
)

// Deps are the dependencies every use case shares; each resource's
// Service embeds one (the same for all of a function's services).
type Deps struct {
	Store    *store.Store
	Envelope *envelope.Envelope
	Compute  compute.Client
	DNS      dns.Client
	Renderer Renderer // needed by foundings, pools, replacements and kubeconfigs
	Settings Settings
	Now      func() time.Time
	Log      *slog.Logger
}

// Clock is the time now (Now when set, for tests).
func (d *Deps) Clock() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// DNSTTL is the control-plane name's TTL in seconds (Settings.DNSTTL).
func (d *Deps) DNSTTL() int { return cmp.Or(d.Settings.DNSTTL, clusterfacts.DNSRecordTTL) }

// Logger is Log, or the default logger.
func (d *Deps) Logger() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// Issuer issues leaves of alg under the settings' lifetime.
func (d *Deps) Issuer(alg pki.Algorithm) pki.Issuer {
	return pki.Issuer{Algorithm: alg, Now: d.Clock, LeafLifetime: d.Settings.LeafLifetime}
}

// NewLease is a fresh lease of length dur (def when zero) from now.
func (d *Deps) NewLease(dur, def time.Duration) store.Lease {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return store.Lease{Owner: hex.EncodeToString(b), Until: d.Clock().Add(cmp.Or(dur, def))}
}

// RequestLease is the lease an API request holds the operation it drives
// under.
func (d *Deps) RequestLease() store.Lease { return d.NewLease(d.Settings.Lease, DefaultLease) }

// Driver is what every run of an operation shares; retryAfter zero is
// DefaultRetryAfter, and a wait is looked at again after DefaultLookAgain
// or retryAfter, whichever is sooner.
func (d *Deps) Driver(retryAfter time.Duration) engine.Driver {
	retryAfter = cmp.Or(retryAfter, DefaultRetryAfter)
	return engine.Driver{Now: d.Clock, RetryAfter: retryAfter, LookAgain: min(retryAfter, DefaultLookAgain),
		UndoTimeout: UndoTimeout, Log: d.Logger()}
}

// InTime is checked before each remote side effect.
func (d *Deps) InTime(deadline time.Time) error { return engine.InTime(d.Clock(), deadline) }

// AnswerDeadline is when a request stops driving its operation and
// answers: after Settings.AnswerWithin, or 5 s before the request's own
// deadline if that comes first.
func (d *Deps) AnswerDeadline(ctx context.Context) time.Time {
	return Within(ctx, d.Clock().Add(cmp.Or(d.Settings.AnswerWithin, DefaultAnswerWithin)), 5*time.Second)
}

// Within is deadline, or margin before ctx's deadline if that comes first.
func Within(ctx context.Context, deadline time.Time, margin time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Add(-margin).Before(deadline) {
		return d.Add(-margin)
	}
	return deadline
}

// Pass is one reconciler run's limits, as each kind's handler reads them
// (zero durations: the kinds' defaults).
type Pass struct {
	Deadline                    time.Time // when the run stops driving what it claimed
	RetryAfter                  time.Duration
	ResumeWithin, ReplaceWithin time.Duration
}
