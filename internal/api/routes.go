package api

import (
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// Route is one row of the API: which function serves which method and path,
// for a VM's routes how often one VM may call it, and for a route that
// changes state the action its audit records name (internal/audit). Its
// handler is in its function's Handlers set.
type Route struct {
	Function string // the logical id in template.yaml
	Method   string
	Path     string // API Gateway path syntax, also valid for http.ServeMux
	PerVM    vmlimit.Budget
	Audit    string // "" for a read
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
)

// Routes is the one table of every route k8sapi serves.
var Routes = []Route{
	{"HealthFunction", http.MethodGet, "/health", vmlimit.Budget{}, ""},
	{"HealthFunction", http.MethodGet, "/openapi.json", vmlimit.Budget{}, ""},
	{"HealthFunction", http.MethodGet, "/docs", vmlimit.Budget{}, ""},
	{"CreateClusterFunction", http.MethodPost, "/clusters", vmlimit.Budget{}, "cluster.create"},
	{"ClustersFunction", http.MethodGet, "/clusters", vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}", vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodDelete, "/clusters/{id}", vmlimit.Budget{}, "cluster.delete"},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/nodes/{vm_id}/bootstrap", vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodPost, "/clusters/{id}/nodes/{vm_id}/rebootstrap", vmlimit.Budget{}, "node.rebootstrap"},
	// Issuing opens the cluster CA: the function with founding's KMS right
	// serves it (a replay of POST /clusters issues the same way); the list
	// reads rows only.
	{"CreateClusterFunction", http.MethodPost, "/clusters/{id}/kubeconfig", vmlimit.Budget{}, "kubeconfig.issue"},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/kubeconfigs", vmlimit.Budget{}, ""},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/events", vmlimit.Budget{}, ""},
	// A bundle fetch changes state too: the window's first issues the
	// node's identities and records bundle_fetched.
	{"GetBundleFunction", http.MethodGet, bundle.PathTemplate, fetchBudget, "bundle.fetch"},
	{"GetBundleFunction", http.MethodPost, bundle.StatusPathTemplate, statusBudget, "node.report_status"},
	{"GetBundleFunction", http.MethodPost, bundle.RenewPathTemplate, renewBudget, "node.renew"},
}

// handler serves one route.
type handler = func(*Server, http.ResponseWriter, *http.Request)

// Handlers are one function's handlers by route key. Each function's main
// names its own set, so its binary links only its own handlers and what
// they use (one table of every handler would link all of them into each,
// against the 15 MiB each binary is held to); TestHandlersServeTheRoutes
// holds each set equal to the function's rows in Routes.
type Handlers map[string]handler

// The handler sets, one per function: functions, not variables, so a
// binary links only the one its main calls.

// HealthHandlers serves HealthFunction's routes.
func HealthHandlers() Handlers {
	return Handlers{"GET /health": (*Server).health, "GET /openapi.json": (*Server).openAPI, "GET /docs": (*Server).docs}
}

// CreateClusterHandlers serves CreateClusterFunction's routes.
func CreateClusterHandlers() Handlers {
	return Handlers{"POST /clusters": (*Server).createCluster, "POST /clusters/{id}/kubeconfig": (*Server).issueKubeconfig}
}

// ClustersHandlers serves ClustersFunction's routes.
func ClustersHandlers() Handlers {
	return Handlers{
		"GET /clusters":                                 (*Server).listClusters,
		"GET /clusters/{id}":                            (*Server).getCluster,
		"DELETE /clusters/{id}":                         (*Server).deleteCluster,
		"GET /clusters/{id}/nodes/{vm_id}/bootstrap":    (*Server).nodeBootstrap,
		"POST /clusters/{id}/nodes/{vm_id}/rebootstrap": (*Server).rebootstrap,
		"GET /clusters/{id}/kubeconfigs":                (*Server).listKubeconfigs,
		"GET /clusters/{id}/events":                     (*Server).listEvents,
	}
}

// GetBundleHandlers serves GetBundleFunction's routes.
func GetBundleHandlers() Handlers {
	return Handlers{
		"GET " + bundle.PathTemplate:        (*Server).getBundle,
		"POST " + bundle.StatusPathTemplate: (*Server).reportStatus,
		"POST " + bundle.RenewPathTemplate:  (*Server).renewCertificates,
	}
}

// HandlersOf is function's handler set, for tests and tools: a function's
// main names its own, so its binary never links this.
func HandlersOf(function string) Handlers {
	sets := map[string]func() Handlers{
		"HealthFunction": HealthHandlers, "CreateClusterFunction": CreateClusterHandlers,
		"ClustersFunction": ClustersHandlers, "GetBundleFunction": GetBundleHandlers,
	}
	if set, ok := sets[function]; ok {
		return set()
	}
	return nil
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
