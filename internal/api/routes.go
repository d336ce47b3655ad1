package api

import (
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// Route is one row of the API: which function serves which method and path,
// for a VM's routes how often one VM may call it, and for a route that
// changes state the action its audit records name (internal/audit).
type Route struct {
	Function string // the logical id in template.yaml
	Method   string
	Path     string // API Gateway path syntax, also valid for http.ServeMux
	handle   func(*Server, http.ResponseWriter, *http.Request)
	PerVM    vmlimit.Budget
	Audit    string // "" for a read
}

// Per-VM budgets of the bootstrap routes. A node fetches its bundle once
// (the shim retries a failure every 5 s), reports about ten phases, and
// renews daily; each budget is several times that, so only a VM calling in
// a loop meets it.
var (
	fetchBudget  = vmlimit.Budget{Calls: 20, Per: 10 * time.Minute}
	statusBudget = vmlimit.Budget{Calls: 60, Per: 10 * time.Minute}
	renewBudget  = vmlimit.Budget{Calls: 12, Per: time.Hour}
)

// Routes is the one table of every route k8sapi serves.
var Routes = []Route{
	{"HealthFunction", http.MethodGet, "/health", (*Server).health, vmlimit.Budget{}, ""},
	{"HealthFunction", http.MethodGet, "/openapi.json", (*Server).openAPI, vmlimit.Budget{}, ""},
	{"HealthFunction", http.MethodGet, "/docs", (*Server).docs, vmlimit.Budget{}, ""},
	{"CreateClusterFunction", http.MethodPost, "/clusters", (*Server).createCluster, vmlimit.Budget{}, "cluster.create"},
	{"ClustersFunction", http.MethodGet, "/clusters", (*Server).listClusters, vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}", (*Server).getCluster, vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodDelete, "/clusters/{id}", (*Server).deleteCluster, vmlimit.Budget{}, "cluster.delete"},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/nodes/{vm_id}/bootstrap", (*Server).nodeBootstrap, vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodPost, "/clusters/{id}/nodes/{vm_id}/rebootstrap", (*Server).rebootstrap, vmlimit.Budget{}, "node.rebootstrap"},
	// Issuing opens the cluster CA: the function with founding's KMS right
	// serves it (a replay of POST /clusters issues the same way); the list
	// reads rows only.
	{"CreateClusterFunction", http.MethodPost, "/clusters/{id}/kubeconfig", (*Server).issueKubeconfig, vmlimit.Budget{}, "kubeconfig.issue"},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/kubeconfigs", (*Server).listKubeconfigs, vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/events", (*Server).listEvents, vmlimit.Budget{}, ""},
	// A bundle fetch changes state too: the window's first issues the
	// node's identities and records bundle_fetched.
	{"GetBundleFunction", http.MethodGet, bundle.PathTemplate, (*Server).getBundle, fetchBudget, "bundle.fetch"},
	{"GetBundleFunction", http.MethodPost, bundle.StatusPathTemplate, (*Server).reportStatus, statusBudget, "node.report_status"},
	{"GetBundleFunction", http.MethodPost, bundle.RenewPathTemplate, (*Server).renewCertificates, renewBudget, "node.renew"},
}

// budgets maps each route pattern ("METHOD /path", as http.ServeMux
// reports the one it matched) to its per-VM budget. Filled by init: the
// handlers in Routes read it, so Routes cannot (an initialization cycle).
var budgets = map[string]vmlimit.Budget{}

func init() {
	for _, r := range Routes {
		budgets[r.Method+" "+r.Path] = r.PerVM
	}
}

// budgetOf is the per-VM budget of the matched route pattern.
func budgetOf(pattern string) vmlimit.Budget { return budgets[pattern] }
