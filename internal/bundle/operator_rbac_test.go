package bundle

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/excloud/k8sapi/internal/pki"
)

// clusterRoleBindings are the ClusterRoleBindings of a manifest, by name.
func clusterRoleBindings(t *testing.T, manifest string) map[string]rbacv1.ClusterRoleBinding {
	t.Helper()
	out := map[string]rbacv1.ClusterRoleBinding{}
	for i, doc := range strings.Split(manifest, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		if meta.Kind != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding
		strictYAML(t, "ClusterRoleBinding", doc, &b)
		out[b.Name] = b
	}
	return out
}

// The operators' admin identities are cluster-admin through RBAC: the
// control plane's RBAC, which the initial node's addons apply, binds
// k8sapi's group (the one the cert table puts every operator identity in)
// to cluster-admin, and nothing it binds is system:masters, which RBAC
// could not take back.
func TestOperatorsAreClusterAdminsThroughRBAC(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		bindings := clusterRoleBindings(t, mustFile(t, b, addonDir+"/control-plane-rbac.yaml"))
		admins, ok := bindings[pki.ClusterAdminsGroup]
		if !ok {
			t.Fatalf("%s: no ClusterRoleBinding %s among %d", b.Metadata.NodeName, pki.ClusterAdminsGroup, len(bindings))
		}
		want := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: pki.ClusterAdminsGroup}
		if admins.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}) ||
			len(admins.Subjects) != 1 || admins.Subjects[0] != want {
			t.Errorf("%s: %s binds %+v to %+v; want the group to cluster-admin", b.Metadata.NodeName, admins.Name, admins.Subjects, admins.RoleRef)
		}
		for name, binding := range bindings {
			for _, s := range binding.Subjects {
				if s.Name == "system:masters" {
					t.Errorf("%s: %s binds system:masters", b.Metadata.NodeName, name)
				}
			}
		}
	}
	for _, name := range pki.Names(pki.PhaseOperator) {
		spec, _ := pki.Lookup(name)
		if strings.Join(spec.Organization, ",") != pki.ClusterAdminsGroup {
			t.Errorf("the operator's %s is in %v, want %s only", name, spec.Organization, pki.ClusterAdminsGroup)
		}
	}
}

// Only the control-plane identity may read the API servers' /metrics
// (its health report's deprecated APIs): the one role granting it is
// GET of that path alone, bound to that user alone, and a worker's
// kubelet identity is not it.
func TestOnlyTheControlPlaneIdentityReadsMetrics(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		manifest := mustFile(t, b, addonDir+"/control-plane-rbac.yaml")
		var grants []string
		for _, doc := range strings.Split(manifest, "\n---\n") {
			var role rbacv1.ClusterRole
			if yaml.Unmarshal([]byte(doc), &role) != nil || role.Kind != "ClusterRole" {
				continue
			}
			for _, r := range role.Rules {
				if len(r.NonResourceURLs) > 0 {
					grants = append(grants, role.Name+": "+strings.Join(r.Verbs, ",")+" "+strings.Join(r.NonResourceURLs, ",")+" "+strings.Join(r.Resources, ","))
				}
			}
		}
		if len(grants) != 1 || grants[0] != "exk8s:apiserver-metrics-reader: get /metrics " {
			t.Errorf("%s: non-resource grants %q, want get /metrics alone", b.Metadata.NodeName, grants)
		}
		readers := clusterRoleBindings(t, manifest)["exk8s:apiserver-metrics-reader"]
		want := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControlPlaneTaintUser}
		if readers.RoleRef.Name != "exk8s:apiserver-metrics-reader" || len(readers.Subjects) != 1 || readers.Subjects[0] != want {
			t.Errorf("%s: the metrics readers are %+v (role %s), want %s alone", b.Metadata.NodeName, readers.Subjects, readers.RoleRef.Name, ControlPlaneTaintUser)
		}
	}
}
