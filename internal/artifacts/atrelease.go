package artifacts

import (
	"maps"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// AtRelease is a cluster's recorded set a, recorded for the cluster's own
// version, as a node at release r uses it while the cluster moves to or
// from r (issue 38): a's bases, registry and pins, r's etcd (or a's, when
// a runs a later patch of the same minor: an upgrade never moves etcd
// back), CoreDNS and pause versions, and the pins of r's files taken from configured (the
// deployment's manifest) where a has none. Files are named by their
// versions, so a's pins and r's never collide; a node at the cluster's
// own version uses a as recorded.
func (a Set) AtRelease(r Release, configured Set, cni clusterfacts.CNI) Set {
	out := a.For(r, "")
	out.EtcdVersion = laterPatch(a.EtcdVersion, r.Etcd)
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

// laterPatch is recorded when it is a later (or the same) patch of
// table's minor, else table: "v3.6.16" over "v3.6.10", never "v3.5.x".
func laterPatch(recorded, table string) string {
	rm, rp, rok := minorAndPatch(recorded)
	tm, tp, tok := minorAndPatch(table)
	if rok && tok && rm == tm && rp >= tp {
		return recorded
	}
	return table
}

// minorAndPatch splits "vX.Y.Z" into "vX.Y" and Z.
func minorAndPatch(v string) (string, int, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || strings.Count(v, ".") != 2 {
		return "", 0, false
	}
	patch, err := strconv.Atoi(v[i+1:])
	return v[:i], patch, err == nil
}
