package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// Route is one row of the API: which function serves which method and path,
// for a VM's routes how often one VM may call it, and for a route that
// changes state the action its audit records name (internal/audit).
type Route struct {
	Function string // the logical id in template.yaml (set by Function.Routes)
	Method   string
	Path     string // API Gateway path syntax, also valid for http.ServeMux
	handle   func(*Server, http.ResponseWriter, *http.Request)
	PerVM    vmlimit.Budget
	Audit    string // "" for a read
	// Trail: the route's events are kept in its cluster's trail (GET
	// /clusters/{id}/events, whose action enum lists exactly these); any
	// other audited route's are in the functions' logs only (a VM's
	// fetches, reports and renewals: many, and the node's own view shows
	// them).
	Trail bool
	// Variants are the other actions its handler may record a request
	// under (audit.Note.As), kept in the trail like Audit.
	Variants []string
}

// Key is the route's "METHOD /path".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Per-VM budgets of the bootstrap routes. A node fetches its bundle once
// (the shim retries a failure every 5 s), reports about ten phases, and
// renews daily; each budget is several times that, so only a VM calling in
// a loop meets it.
var (
	fetchBudget  = vmlimit.Budget{Calls: 20, Per: 10 * time.Minute}
	statusBudget = vmlimit.Budget{Calls: 60, Per: 10 * time.Minute}
	renewBudget  = vmlimit.Budget{Calls: 12, Per: time.Hour}
	// A worker sends its certificate requests once per bootstrap window
	// (its script retries a failure); a few calls cover the retries and
	// a refusal it learns from.
	workerCSRBudget = vmlimit.Budget{Calls: 10, Per: 10 * time.Minute}
	// The snapshot timer asks every 5 minutes and reports once per
	// snapshot, retrying a failure a few times.
	snapshotAskBudget    = vmlimit.Budget{Calls: 40, Per: time.Hour}
	snapshotReportBudget = vmlimit.Budget{Calls: 30, Per: time.Hour}
	// A ready node reports its health every 30 s (nodehealth.ReportEvery):
	// 20 calls in 10 minutes, three times that.
	healthBudget = vmlimit.Budget{Calls: 60, Per: 10 * time.Minute}
	// A restored cluster's node asks once before its etcd first starts; a
	// re-opened bootstrap or a failed download asks again.
	restoreBudget = vmlimit.Budget{Calls: 10, Per: time.Hour}
	// The etcd CRL timer asks every minute (a revocation is in force
	// within two); twice that covers a restarted timer and a hand run.
	etcdCRLBudget = vmlimit.Budget{Calls: 120, Per: time.Hour}
	// The etcd membership timer asks every minute, as the CRL timer; the
	// removing member reports once per removal, retrying a failure.
	etcdMembershipAskBudget    = vmlimit.Budget{Calls: 120, Per: time.Hour}
	etcdMembershipReportBudget = vmlimit.Budget{Calls: 30, Per: time.Hour}
	// The addons timer asks every minute, as the membership timer; the
	// chosen node reports once per apply, retrying a failure.
	addonsAskBudget    = vmlimit.Budget{Calls: 120, Per: time.Hour}
	addonsReportBudget = vmlimit.Budget{Calls: 30, Per: time.Hour}
)

// Function is one Lambda function of template.yaml (Name, its logical id)
// and the routes it serves. Each function's main serves its own
// (Server.Handler): a route's handler is linked only into the binary of
// the function that serves it, never into the others.
type Function struct {
	Name   string
	routes []Route
}

// The route table, one part per function: together they are every route
// k8sapi serves (Routes).
var (
	HealthFunction = Function{"HealthFunction", []Route{
		{Method: http.MethodGet, Path: "/health", handle: (*Server).health},
		{Method: http.MethodGet, Path: "/openapi.json", handle: (*Server).openAPI},
		{Method: http.MethodGet, Path: "/docs", handle: (*Server).docs},
		{Method: http.MethodGet, Path: "/kubernetes-versions", handle: (*Server).kubernetesVersions},
	}}
	// Issuing a kubeconfig opens the cluster CA: the function with
	// founding's KMS right serves it (a replay of POST /clusters issues the
	// same way); ClustersFunction lists the issues, reading rows only.
	CreateClusterFunction = Function{"CreateClusterFunction", []Route{
		{Method: http.MethodPost, Path: "/clusters", handle: (*Server).createCluster, Audit: "cluster.create", Trail: true},
		{Method: http.MethodPost, Path: "/clusters/{id}/kubeconfig", handle: (*Server).issueKubeconfig, Audit: "kubeconfig.issue", Trail: true},
		// An exec credential signs the operator's own key with the
		// cluster CA: the same KMS right.
		{Method: http.MethodPost, Path: "/clusters/{id}/credentials", handle: (*Server).issueCredential, Audit: "credential.issue", Trail: true},
	}}
	ClustersFunction = Function{"ClustersFunction", []Route{
		{Method: http.MethodGet, Path: "/clusters", handle: (*Server).listClusters},
		// The compute API's lists, for the operator's token: what a
		// cluster file's ids name (k8sapi get images).
		{Method: http.MethodGet, Path: "/catalog", handle: (*Server).catalog},
		{Method: http.MethodGet, Path: "/clusters/{id}", handle: (*Server).getCluster},
		{Method: http.MethodDelete, Path: "/clusters/{id}", handle: (*Server).deleteCluster, Audit: "cluster.delete", Trail: true},
		{Method: http.MethodPut, Path: "/clusters/{id}/spec", handle: (*Server).keepClusterSpec, Audit: "cluster.keep_spec"},
		// A scaling is recorded here, as a replacement; the reconciler
		// drives it. Remediation settings alone are set here (no scaling).
		{Method: http.MethodPatch, Path: "/clusters/{id}", handle: (*Server).patchCluster, Audit: "cluster.scale_control_plane", Trail: true,
			Variants: []string{AuditSetRemediation}},
		// Recorded here (no key opened); the reconciler, which holds the
		// KMS right, makes the new generations and drives the phases.
		{Method: http.MethodPost, Path: "/clusters/{id}/rotate-ca", handle: (*Server).rotateCA, Audit: "cluster.rotate_ca", Trail: true},
		{Method: http.MethodPost, Path: "/clusters/{id}/rotate-ca/abort", handle: (*Server).abortCARotation, Audit: "cluster.abort_ca_rotation", Trail: true},
		{Method: http.MethodGet, Path: "/clusters/{id}/nodes/{vm_id}/bootstrap", handle: (*Server).nodeBootstrap},
		{Method: http.MethodPost, Path: "/clusters/{id}/nodes/{vm_id}/rebootstrap", handle: (*Server).rebootstrap, Audit: "node.rebootstrap", Trail: true},
		// Recorded here (no VM is created, no key opened); the reconciler,
		// which holds the KMS right, drives it.
		{Method: http.MethodPost, Path: "/clusters/{id}/nodes/{vm_id}/replace", handle: (*Server).replaceNode, Audit: "node.replace", Trail: true},
		{Method: http.MethodGet, Path: "/clusters/{id}/kubeconfigs", handle: (*Server).listKubeconfigs},
		{Method: http.MethodGet, Path: "/clusters/{id}/events", handle: (*Server).listEvents},
		{Method: http.MethodPost, Path: "/clusters/{id}/etcd-snapshots", handle: (*Server).takeEtcdSnapshot, Audit: "etcd_snapshot.take", Trail: true},
		{Method: http.MethodGet, Path: "/clusters/{id}/etcd-snapshots", handle: (*Server).listEtcdSnapshots},
		// Node pools create and delete VMs and open no key: this function's.
		{Method: http.MethodPost, Path: "/clusters/{id}/node-pools", handle: (*Server).createNodePool, Audit: "node_pool.create", Trail: true},
		{Method: http.MethodGet, Path: "/clusters/{id}/node-pools", handle: (*Server).listNodePools},
		{Method: http.MethodGet, Path: "/clusters/{id}/node-pools/{pool}", handle: (*Server).getNodePool},
		{Method: http.MethodPatch, Path: "/clusters/{id}/node-pools/{pool}", handle: (*Server).scaleNodePool, Audit: "node_pool.scale", Trail: true},
		{Method: http.MethodDelete, Path: "/clusters/{id}/node-pools/{pool}", handle: (*Server).deleteNodePool, Audit: "node_pool.delete", Trail: true},
		// Upgrades are recorded here (no VM is created, no key opened); the
		// reconciler drives them (docs/UPGRADES.md).
		{Method: http.MethodPost, Path: "/clusters/{id}/upgrade", handle: (*Server).upgradeCluster, Audit: "cluster.upgrade", Trail: true,
			Variants: []string{AuditUpgradeOverride}},
		{Method: http.MethodGet, Path: "/clusters/{id}/upgrade", handle: (*Server).getUpgrade},
		{Method: http.MethodPost, Path: "/clusters/{id}/upgrade/resume", handle: (*Server).resumeUpgrade, Audit: "cluster.upgrade_resume", Trail: true},
		{Method: http.MethodPost, Path: "/clusters/{id}/upgrade/abort", handle: (*Server).abortUpgrade, Audit: "cluster.upgrade_abort", Trail: true},
	}}
	// A bundle fetch changes state too: the window's first issues the
	// node's identities and records bundle_fetched.
	GetBundleFunction = Function{"GetBundleFunction", []Route{
		{Method: http.MethodGet, Path: bundle.PathTemplate, handle: (*Server).getBundle, PerVM: fetchBudget, Audit: "bundle.fetch"},
		{Method: http.MethodPost, Path: bundle.StatusPathTemplate, handle: (*Server).reportStatus, PerVM: statusBudget, Audit: "node.report_status"},
		{Method: http.MethodPost, Path: bundle.RenewPathTemplate, handle: (*Server).renewCertificates, PerVM: renewBudget, Audit: "node.renew"},
		// A ready node's health report (docs/NODE-HEALTH.md), every 30 s.
		{Method: http.MethodPost, Path: bundle.HealthPathTemplate, handle: (*Server).reportHealth, PerVM: healthBudget, Audit: "node.report_health"},
		// The node chosen to take a cluster's etcd snapshot gets its upload
		// URL (an issued credential: audited) and reports the upload.
		{Method: http.MethodGet, Path: bundle.SnapshotPathTemplate, handle: (*Server).nextEtcdSnapshot, PerVM: snapshotAskBudget, Audit: "etcd_snapshot.upload_url", Trail: true},
		{Method: http.MethodPost, Path: bundle.SnapshotPathTemplate, handle: (*Server).reportEtcdSnapshot, PerVM: snapshotReportBudget, Audit: "etcd_snapshot.report", Trail: true},
		// A restored cluster's node gets the download URL of its snapshot
		// (an issued credential: audited).
		{Method: http.MethodGet, Path: bundle.RestorePathTemplate, handle: (*Server).etcdRestoreURL, PerVM: restoreBudget, Audit: "etcd_restore.download_url", Trail: true},
		// A control-plane node's etcd CRL: public (serials and a signature),
		// asked every minute: a read, logged, not audited.
		{Method: http.MethodGet, Path: bundle.EtcdCRLPathTemplate, handle: (*Server).etcdCRL, PerVM: etcdCRLBudget},
		// A shrinking control plane's removing member asks which members
		// to remove (a read, every minute) and reports each removal (in
		// the trail: the reconciler deletes the leaving VM on its word).
		{Method: http.MethodGet, Path: bundle.EtcdMembershipPathTemplate, handle: (*Server).etcdRemovals, PerVM: etcdMembershipAskBudget},
		{Method: http.MethodPost, Path: bundle.EtcdMembershipPathTemplate, handle: (*Server).reportEtcdRemoval, PerVM: etcdMembershipReportBudget,
			Audit: "etcd_member.remove_report", Trail: true},
		// An upgrade's chosen node asks for the addons at the pass's
		// release (a read, every minute) and reports their apply (in the
		// trail: the upgrade moves on, or pauses, on its word).
		{Method: http.MethodGet, Path: bundle.AddonsPathTemplate, handle: (*Server).upgradeAddons, PerVM: addonsAskBudget},
		{Method: http.MethodPost, Path: bundle.AddonsPathTemplate, handle: (*Server).reportUpgradeAddons, PerVM: addonsReportBudget,
			Audit: "cluster.upgrade_addons_report", Trail: true},
		// A worker's bootstrap: its bundle holds no key, but signing its
		// certificate requests opens the cluster CA, this function's KMS
		// right. Its fetch is the start of a node joining: audited like
		// the control plane's.
		{Method: http.MethodGet, Path: bundle.WorkerPathTemplate, handle: (*Server).getWorkerBundle, PerVM: fetchBudget, Audit: "worker_bundle.fetch"},
		{Method: http.MethodPost, Path: bundle.WorkerCSRPathTemplate, handle: (*Server).signWorkerCSRs, PerVM: workerCSRBudget, Audit: "worker.csr"},
		{Method: http.MethodPost, Path: bundle.WorkerStatusPathTemplate, handle: (*Server).reportWorkerStatus, PerVM: statusBudget, Audit: "worker.report_status"},
		// A ready worker renews daily, as a control-plane node: its budget.
		{Method: http.MethodPost, Path: bundle.WorkerRenewPathTemplate, handle: (*Server).renewWorkerCertificates, PerVM: renewBudget, Audit: "worker.renew"},
		{Method: http.MethodPost, Path: bundle.WorkerHealthPathTemplate, handle: (*Server).reportWorkerHealth, PerVM: healthBudget, Audit: "worker.report_health"},
	}}
)

// Functions are the functions that serve routes. Tests and tools use it; a
// function's binary must not, or it would link every handler.
func Functions() []Function {
	return []Function{HealthFunction, CreateClusterFunction, ClustersFunction, GetBundleFunction}
}

// FunctionNamed is the function whose logical id is name (tests and
// tools); the zero Function, which serves nothing, if none is.
func FunctionNamed(name string) Function {
	for _, f := range Functions() {
		if f.Name == name {
			return f
		}
	}
	return Function{}
}

// Routes is every route k8sapi serves, each with its function's logical id.
func Routes() []Route {
	var out []Route
	for _, f := range Functions() {
		out = append(out, f.Routes()...)
	}
	return out
}

// Routes are f's routes, each with f's logical id.
func (f Function) Routes() []Route {
	out := slices.Clone(f.routes)
	for i := range out {
		out[i].Function = f.Name
	}
	return out
}
