package artifacts

import (
	"maps"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// AtRelease is a cluster's recorded set a, recorded for the cluster's own
// version, as a node at release r uses it while the cluster moves to or
// from r (issue 38): a's bases, registry and pins, r's etcd, CoreDNS and
// pause versions, and the pins of r's files taken from configured (the
// deployment's manifest) where a has none. Files are named by their
// versions, so a's pins and r's never collide; a node at the cluster's
// own version uses a as recorded.
func (a Set) AtRelease(r Release, configured Set, cni clusterfacts.CNI) Set {
	out := a.For(r, "")
	out.SHA256 = maps.Clone(a.SHA256)
	if out.SHA256 == nil {
		out.SHA256 = map[string]string{}
	}
	for name, digest := range configured.For(r, "").Record(r.Kubernetes, cni).SHA256 {
		if _, ok := out.SHA256[name]; !ok {
			out.SHA256[name] = digest
		}
	}
	return out
}
