package artifacts

import (
	"slices"
	"strings"
)

// Release is one Kubernetes version k8sapi founds clusters at: the
// versions of what runs beside it (the control plane and kube-proxy are
// the release itself), where a cluster at it may be upgraded to, and
// whether the upstream conformance suite passed on a cluster k8sapi
// founded at it (CONFORMANCE.md).
type Release struct {
	Kubernetes string
	// Etcd, CoreDNS and Pause are the versions a cluster at this release
	// runs: upstream's (kubeadm's constants for the minor), or a later
	// patch of the same minor where k8sapi ships one (etcd).
	Etcd, CoreDNS, Pause string
	// UpgradesTo are the releases a cluster at this one may move to in
	// one pass: the next minor's, and later patches of its own. A target
	// further on is a chain of passes (issue 38).
	UpgradesTo []string
	// Conformance is what the conformance suite said of a cluster founded
	// at this release ("" when it has not run on one yet).
	Conformance string
}

// Releases is the one table of supported Kubernetes versions, oldest
// first. A release is added here with its pins in the shipped manifest
// (scripts/pin-artifacts.sh): until then founding at it refuses with
// artifacts_not_pinned, as for any unpinned download.
func Releases() []Release {
	return []Release{
		{Kubernetes: "v1.35.4", Etcd: "v3.6.10", CoreDNS: "v1.13.1", Pause: "3.10.1",
			UpgradesTo: []string{"v1.36.3"}, Conformance: "168/168 [Conformance] tests passed (make conformance, 2026-11-29)"},
		{Kubernetes: "v1.36.3", Etcd: "v3.6.10", CoreDNS: "v1.14.2", Pause: "3.10.2"},
	}
}

// ReleaseOf is the release of version; false when k8sapi does not support
// it.
func ReleaseOf(version string) (Release, bool) {
	i := slices.IndexFunc(Releases(), func(r Release) bool { return r.Kubernetes == version })
	if i < 0 {
		return Release{}, false
	}
	return Releases()[i], true
}

// SupportedVersions are the releases' versions, oldest first.
func SupportedVersions() []string {
	var out []string
	for _, r := range Releases() {
		out = append(out, r.Kubernetes)
	}
	return out
}

// SupportedList is SupportedVersions for a message: "v1.35.4, v1.36.3".
func SupportedList() string { return strings.Join(SupportedVersions(), ", ") }

// For is s with the versions of what runs beside release r: a cluster
// founded at r records them. The deployment's configured set is for its
// own KUBERNETES_VERSION: its bases, registry and pins hold for every
// release, its etcd, CoreDNS and pause versions only for the release it
// was configured with (the configured default may differ from the table:
// an operator's choice stays theirs).
func (s Set) For(r Release, configured string) Set {
	if r.Kubernetes == configured {
		return s
	}
	s.EtcdVersion, s.CoreDNSVersion, s.PauseVersion = r.Etcd, r.CoreDNS, r.Pause
	return s
}
