package cli

import (
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/artifacts"
)

// The CLI completes --kubernetes-version from its own list; the list is
// the release table's.
func TestKubernetesVersionFlagListsTheReleaseTable(t *testing.T) {
	i := slices.IndexFunc(createFields, func(f createField) bool { return f.flag == "kubernetes-version" })
	if i < 0 || !slices.Equal(createFields[i].values, artifacts.SupportedVersions()) {
		t.Fatalf("--kubernetes-version values %v, release table %v", createFields[i].values, artifacts.SupportedVersions())
	}
}
