package bundle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// The VM's shell library is templates/exk8s-progress.sh: the one definition
// of log and die, retry, the steps and reports of a script and its exit
// handling, the IMDS proofs, the calls to k8sapi and atomic file writes.
// The bundle's scripts source it from the host; the userdata shim, which
// runs before the bundle exists, carries the same text, rendered in
// (templates: "exk8s-progress-lib"). What it knows of k8sapi is rendered
// from the tables here: the VM's routes, the time each kind of call may
// take, and the phases it reports (the template func phase).

// The routes a VM calls, below PathTemplate: where it reports its phases,
// renews its certificates, and asks for and reports an etcd snapshot (GET:
// the pending snapshot and its upload URL; POST: the upload's report); a
// worker's are below WorkerPathTemplate (renderer.go). internal/api serves
// them.
const (
	StatusPathTemplate   = PathTemplate + "/status"
	RenewPathTemplate    = PathTemplate + "/renew"
	SnapshotPathTemplate = PathTemplate + "/etcd-snapshot"
	// GET: the download URL of a restored cluster's snapshot.
	RestorePathTemplate = PathTemplate + "/etcd-restore"
	// POST: a ready node's health report (exk8s-health-report.sh).
	HealthPathTemplate = PathTemplate + "/health"
	// GET: the cluster's current etcd CRL (etcdcrl.go).
	EtcdCRLPathTemplate = PathTemplate + "/etcd-crl"
	// GET: the members a shrinking control plane's removing member
	// removes from etcd; POST: a removal's report (etcdmembership.go).
	EtcdMembershipPathTemplate = PathTemplate + "/etcd-membership"
	// GET: the addons an upgrade's chosen node applies at the pass's
	// release; POST: its report (addons.go).
	AddonsPathTemplate = PathTemplate + "/addons"
)

// VMRoute is one of k8sapi's routes a VM calls: the name the shell library
// knows it by, and its path in API Gateway syntax ({vm_id} is the VM's id).
type VMRoute struct{ Name, Path string }

// VMRoutes lists every route the VM's shell library calls.
func VMRoutes() []VMRoute {
	return []VMRoute{{"bundle", PathTemplate}, {"status", StatusPathTemplate}, {"renew", RenewPathTemplate},
		{"etcd_snapshot", SnapshotPathTemplate}, {"etcd_restore", RestorePathTemplate}, {"etcd_crl", EtcdCRLPathTemplate},
		{"etcd_membership", EtcdMembershipPathTemplate}, {"addons", AddonsPathTemplate},
		{"worker_bundle", WorkerPathTemplate}, {"worker_csr", WorkerCSRPathTemplate},
		{"worker_status", WorkerStatusPathTemplate}, {"worker_renew", WorkerRenewPathTemplate},
		{"health", HealthPathTemplate}, {"worker_health", WorkerHealthPathTemplate}}
}

// imdsBaseURL is where a VM reaches IMDS unless EXC_IMDS_BASE_URL says
// otherwise.
const imdsBaseURL = "http://imdsapi.excloud.in"

// vmCall is one kind of HTTP call the VM's scripts make, and how long it may
// take: curl's limits on connecting and on one attempt (0: none), curl's own
// retries of what is worth retrying (no answer, 408, 429, 5xx; 0: none),
// and how many times the library runs curl, Interval seconds apart, before
// it gives up.
type vmCall struct {
	Kind                          string
	ConnectTimeout, MaxTime       int
	Retries, RetryDelay, RetryMax int
	Attempts, Interval            int
}

// vmCalls is the one table of how long the VM's calls may take.
var vmCalls = []vmCall{
	// A status report, and the IMDS proofs it fetches fresh for it: brief;
	// a report never holds up the bootstrap.
	{Kind: "report", ConnectTimeout: 5, MaxTime: 10, Retries: 3, RetryDelay: 2, RetryMax: 20, Attempts: 1},
	// The renewal signs every due certificate and seals it (KMS) in one
	// call: each attempt gets the function's whole time limit (29 s) and
	// more, and curl retries for minutes, as the shim does the bundle fetch;
	// a report's 10 s fit a report, not this.
	{Kind: "renew", ConnectTimeout: 5, MaxTime: 60, Retries: 6, RetryDelay: 10, RetryMax: 300, Attempts: 1},
	// The snapshot timer's ask and report: brief, like a report; the timer
	// runs again in minutes.
	{Kind: "snapshot", ConnectTimeout: 5, MaxTime: 30, Retries: 3, RetryDelay: 2, RetryMax: 30, Attempts: 1},
	// The etcd CRL timer's ask, every minute: it must end well inside the
	// minute, so a revocation is in force within two.
	{Kind: "etcd_crl", ConnectTimeout: 5, MaxTime: 10, Retries: 2, RetryDelay: 2, RetryMax: 20, Attempts: 1},
	// The etcd membership timer's ask and report, every minute: as the
	// CRL timer's, well inside the minute.
	{Kind: "etcd_membership", ConnectTimeout: 5, MaxTime: 10, Retries: 2, RetryDelay: 2, RetryMax: 20, Attempts: 1},
	// The addons timer's ask (the manifests are rendered: tens of KiB)
	// and its report, which is retried longer: an apply done and not
	// reported is done again.
	{Kind: "addons", ConnectTimeout: 5, MaxTime: 30, Retries: 4, RetryDelay: 3, RetryMax: 60, Attempts: 1},
	// The snapshot's upload to its presigned URL: large, so no limit on
	// an attempt (the URL's lifetime bounds it); curl's retries.
	{Kind: "upload", ConnectTimeout: 10, Retries: 3, RetryDelay: 5, Attempts: 1},
	// The shim's IMDS session token and bundle fetch, at boot: IMDS or
	// k8sapi may not answer yet, so every 5 s for 10 minutes.
	{Kind: "boot", ConnectTimeout: 5, MaxTime: 60, Attempts: 120, Interval: 5},
	// The shim's node identity and access token, once IMDS has answered:
	// every 5 s for 5 minutes.
	{Kind: "boot_identity", ConnectTimeout: 5, MaxTime: 60, Attempts: 60, Interval: 5},
	// An artifact or its published digest, from a download base: files
	// are large, so no limit on an attempt; curl's retries, thrice.
	{Kind: "download", ConnectTimeout: 10, Retries: 5, RetryDelay: 3, Attempts: 3, Interval: 5},
}

// CallRetry is how the shell library retries one kind of call: curl's own
// retries (Retries, each RetryDelay after the last or the answer's
// Retry-After if longer, none that would end past RetryMax), then the
// library's attempts, Interval apart whatever the answer said.
type CallRetry struct {
	Retries    int
	RetryDelay time.Duration
	RetryMax   time.Duration
	Attempts   int
	Interval   time.Duration
}

// RetryOf is kind's retry rule, for a client that calls as a VM does (the
// benchmark's boot storm); false for no such kind.
func RetryOf(kind string) (CallRetry, bool) {
	i := slices.IndexFunc(vmCalls, func(c vmCall) bool { return c.Kind == kind })
	if i < 0 {
		return CallRetry{}, false
	}
	c, sec := vmCalls[i], func(n int) time.Duration { return time.Duration(n) * time.Second }
	return CallRetry{Retries: c.Retries, RetryDelay: sec(c.RetryDelay), RetryMax: sec(c.RetryMax),
		Attempts: max(1, c.Attempts), Interval: sec(c.Interval)}, true
}

// callView is a call as the shell library's template reads it: its
// limits and their curl options (templates read fields only:
// internal/textexec).
type callView struct {
	vmCall
	CurlArgs string
}

// curlArgs are the curl options of the call's limits.
func (c vmCall) curlArgs() string {
	var args []string
	opt := func(name string, v int) {
		if v > 0 {
			args = append(args, name, strconv.Itoa(v))
		}
	}
	opt("--connect-timeout", c.ConnectTimeout)
	opt("--max-time", c.MaxTime)
	if c.Retries > 0 {
		opt("--retry", c.Retries)
		opt("--retry-delay", c.RetryDelay)
		opt("--retry-max-time", c.RetryMax)
		args = append(args, "--retry-connrefused")
	}
	return strings.Join(args, " ")
}

func callViews() []callView {
	out := make([]callView, len(vmCalls))
	for i, c := range vmCalls {
		out[i] = callView{vmCall: c, CurlArgs: c.curlArgs()}
	}
	return out
}

// A failed report carries the last lines of the script's output: enough to
// see why, well inside progress.MaxMessageBytes even if every byte had to
// be replaced by U+FFFD (three bytes).
const (
	failureTailLines = 20
	failureTailBytes = 1200
)

// shellLib is the data of the shell library's template.
type shellLib struct {
	Routes                  []VMRoute
	Calls                   []callView
	Failed                  clusterfacts.Phase
	IMDSBaseURL             string
	ClusterEnv, ProgressEnv string // host paths
	LogDir                  string
	FailureTailLines        int
	FailureTailBytes        int
}

// progressEnv is where the shim writes where this VM reports to, so a
// script run again by hand reports too.
const progressEnv = configDir + "/progress.env"

func newShellLib() shellLib {
	return shellLib{
		Routes:           VMRoutes(),
		Calls:            callViews(),
		Failed:           clusterfacts.Failed,
		IMDSBaseURL:      imdsBaseURL,
		ClusterEnv:       configDir + "/cluster.env",
		ProgressEnv:      progressEnv,
		LogDir:           "/var/log/exk8s",
		FailureTailLines: failureTailLines,
		FailureTailBytes: failureTailBytes,
	}
}

// reportedPhase is the template func phase: name, if it is a phase a VM
// reports (progress's table), else an error that fails the rendering.
func reportedPhase(name string) (string, error) {
	if !slices.Contains(clusterfacts.Reportable(), clusterfacts.Phase(name)) {
		return "", fmt.Errorf("phase: %q is no phase a VM reports", name)
	}
	return name, nil
}
