// Package dbroles names the database role of each function and the user it
// logs in as. Migration 011 creates the roles and holds their grants; this
// table is the one place that says which function is which role, and tests
// hold it equal to template.yaml's functions and to the roles 011 creates.
//
// In production each function logs in as its own user (Login), a member of
// its role and of nothing else: its own Secrets Manager secret with RDS
// Proxy, or with DB_IAM_AUTH its own rds-db:connect user. Locally
// internal/devstack/localpg creates those users (trust auth, no password).
package dbroles

import "sort"

// Functions maps each function (template.yaml's logical id) to its role.
var Functions = map[string]string{
	"CreateClusterFunction": "k8sapi_create_cluster",
	"ClustersFunction":      "k8sapi_clusters",
	"GetBundleFunction":     "k8sapi_get_bundle",
	"HealthFunction":        "k8sapi_health",
	"ReconcilerFunction":    "k8sapi_reconciler",
}

// Login is the user a role's function logs in as: a separate login role
// so the group carries the grants and a user can be rotated or replaced
// (a second one during a password rotation) without touching them.
func Login(role string) string { return role + "_login" }

// Roles are the roles of every function, sorted.
func Roles() []string {
	roles := make([]string, 0, len(Functions))
	for _, r := range Functions {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}
