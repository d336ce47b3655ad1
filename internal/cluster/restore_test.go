package cluster

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The table of what a restore must match: each row refuses with a 409
// naming its field.
func TestRestoreMatchesNameTheField(t *testing.T) {
	s := &Service{Deps: &usecase.Deps{Settings: usecase.Settings{KubernetesVersion: "v1.31.4", ServiceCIDR: usecase.DefaultServiceCIDR, PodCIDR: usecase.DefaultPodCIDR, ClusterDomain: usecase.DefaultClusterDomain}}}
	old := store.Cluster{KubernetesVersion: "v1.31.4", ServiceCIDR: usecase.DefaultServiceCIDR, PodCIDR: usecase.DefaultPodCIDR,
		ClusterDomain: usecase.DefaultClusterDomain, CNI: "cilium", KeyAlgorithm: "ecdsa-p256"}
	spec := clusterspec.Spec{CNI: clusterfacts.CNICilium, KeyAlgorithm: pki.ECDSAP256}
	if err := checkMatches(s.restoreMatches(&old, spec)); err != nil {
		t.Fatalf("all match: %v", err)
	}
	for field, change := range map[string]func(c *store.Cluster){
		"kubernetes_version": func(c *store.Cluster) { c.KubernetesVersion = "v1.30.0" },
		"service_cidr":       func(c *store.Cluster) { c.ServiceCIDR = "10.100.0.0/16" },
		"pod_cidr":           func(c *store.Cluster) { c.PodCIDR = "10.244.0.0/16" },
		"cluster_domain":     func(c *store.Cluster) { c.ClusterDomain = "example.internal" },
		"cni":                func(c *store.Cluster) { c.CNI = "bridge" },
		"key_algorithm":      func(c *store.Cluster) { c.KeyAlgorithm = "rsa-2048" },
	} {
		differs := old
		change(&differs)
		e, ok := apperr.As(checkMatches(s.restoreMatches(&differs, spec)))
		if !ok || e.Code != apperr.RestoreIncompatible || !strings.HasPrefix(e.Message, field+": ") {
			t.Errorf("%s differs: %v", field, e)
		}
	}
}
