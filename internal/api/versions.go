package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/artifacts"
)

// kubernetesVersions serves GET /kubernetes-versions: the release table
// (artifacts.Releases) and the deployment's default. Public, as the API's
// own description is: it names versions, nothing of anyone's.
func (s *Server) kubernetesVersions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, versionsOf(artifacts.Releases(), s.DefaultKubernetesVersion))
}

// versionsOf is the releases as the API shows them, def the default.
func versionsOf(releases []artifacts.Release, def string) apitypes.KubernetesVersions {
	out := apitypes.KubernetesVersions{Default: def, Versions: []apitypes.KubernetesVersion{}}
	for _, r := range releases {
		out.Versions = append(out.Versions, apitypes.KubernetesVersion{
			Version: r.Kubernetes, EtcdVersion: r.Etcd, CoreDNSVersion: r.CoreDNS, PauseVersion: r.Pause,
			UpgradesTo: append([]string{}, r.UpgradesTo...), Conformance: r.Conformance,
		})
	}
	return out
}
