package cluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

// versionOf is the Kubernetes version a founding of spec is at: as asked,
// or the deployment's.
func (s *Service) versionOf(spec clusterspec.Spec) string {
	return cmp.Or(spec.KubernetesVersion, s.Settings.KubernetesVersion)
}

// artifactsFor is the configured artifact set for a cluster at version:
// the components of its release (artifacts.Set.For) when the table has it.
func (s *Service) artifactsFor(version string) artifacts.Set {
	if r, ok := artifacts.ReleaseOf(version); ok {
		return s.Settings.Artifacts.For(r, s.Settings.KubernetesVersion)
	}
	return s.Settings.Artifacts
}

// recordedArtifacts is the artifact set a cluster founded now at version
// records (as JSON for its row): the configured one for its release, its
// pins narrowed to the files of the cluster's versions. Founding refuses
// when a node could not verify every download: some file of
// artifacts.FoundingArch is pinned nowhere and the operator has not
// allowed the published-digest fallback.
func (s *Service) recordedArtifacts(version string, cni clusterfacts.CNI) ([]byte, error) {
	a := s.artifactsFor(version).Record(version, cni)
	if missing := a.Unpinned(version, cni, artifacts.FoundingArch); len(missing) > 0 && !a.DigestFallback {
		return nil, notPinned(missing)
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("recording the artifact set: %w", err)
	}
	return doc, nil
}

func notPinned(missing []string) error {
	return apperr.ArtifactsNotPinned.Detailf(
		"the artifact manifest pins no SHA-256 for %s (%s), and the nodes would have to trust whatever the download "+
			"mirror serves; nothing was created. Pin them in the manifest (ARTIFACT_MANIFEST_FILE, or run "+
			"scripts/pin-artifacts.sh to fill the one k8sapi ships), or allow the published-digest fallback "+
			"(ARTIFACT_DIGEST_FALLBACK=true)", strings.Join(missing, ", "), artifacts.FoundingArch)
}
