package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/bundle"
)

// Route is one row of the API: which function serves which method and path.
type Route struct {
	Function string // the logical id in template.yaml
	Method   string
	Path     string // API Gateway path syntax, also valid for http.ServeMux
	handle   func(*Server, http.ResponseWriter, *http.Request)
}

// Routes is the one table of every route k8sapi serves.
var Routes = []Route{
	{"HealthFunction", http.MethodGet, "/health", (*Server).health},
	{"HealthFunction", http.MethodGet, "/openapi.json", (*Server).openAPI},
	{"HealthFunction", http.MethodGet, "/docs", (*Server).docs},
	{"CreateClusterFunction", http.MethodPost, "/clusters", (*Server).createCluster},
	{"ClustersFunction", http.MethodGet, "/clusters", (*Server).listClusters},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}", (*Server).getCluster},
	{"ClustersFunction", http.MethodDelete, "/clusters/{id}", (*Server).deleteCluster},
	{"ClustersFunction", http.MethodGet, "/clusters/{id}/nodes/{vm_id}/bootstrap", (*Server).nodeBootstrap},
	{"ClustersFunction", http.MethodPost, "/clusters/{id}/nodes/{vm_id}/rebootstrap", (*Server).rebootstrap},
	{"GetBundleFunction", http.MethodGet, bundle.PathTemplate, (*Server).getBundle},
	{"GetBundleFunction", http.MethodPost, bundle.PathTemplate + "/status", (*Server).reportStatus},
	{"GetBundleFunction", http.MethodPost, bundle.PathTemplate + "/renew", (*Server).renewCertificates},
}
