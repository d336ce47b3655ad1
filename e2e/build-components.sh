#!/usr/bin/env bash
# Builds the real control-plane components the end-to-end proof boots:
#   etcd, etcdctl, etcdutl   from go.etcd.io/etcd/server/v3 (etcdmain),
#                            go.etcd.io/etcd/etcdctl/v3 (ctlv3) and
#                            go.etcd.io/etcd/etcdutl/v3 (etcdutl)
#   pause                    the project's own pod sandbox process
#   kube-apiserver,
#   kube-controller-manager,
#   kube-scheduler,
#   kubelet, kube-proxy      from k8s.io/kubernetes (cmd/<name>/app)
#                            (and again at the release the upgrade moves
#                            to, into a folder named by it)
#   kubectl                  from k8s.io/kubectl (pkg/cmd)
#   containerd, ctr,
#   containerd-shim-runc-v2  from github.com/containerd/containerd/v2
#   coredns                  from github.com/coredns/coredns (coremain)
#   registry                 from github.com/distribution/distribution/v3
#   runc                     github.com/opencontainers/runc (cgo, seccomp)
#   bridge, host-local,
#   loopback, portmap,
#   firewall                 github.com/containernetworking/plugins
#   e2e.test, ginkgo         the upstream conformance suite (k8s.io/kubernetes
#                            test/e2e, built with `go test -c`) and its runner
#                            (and again at the upgrade's release, into a
#                            folder named by it)
#   agnhost, nonewprivs,
#   sample-apiserver         the test images' programs the suite names
# runc's and the CNI plugins' commands live in their modules' own main
# packages, which cannot be imported: those are built with `go install
# module@version` straight from the module proxy.
# into e2e/.work/bin/ (or $E2E_BIN_DIR). Each module under components/ pins
# its versions; GOCACHE keeps a rebuild fast. A component whose inputs (its
# module files, the Go version and the flags below) did not change since the
# last build is not linked again, so a second run returns in about a second.
#
# Cold: several minutes on two cores (the second release's Kubernetes commands
# took 37 minutes on a new machine under load). Warm cache: about two minutes.
#
# Usage: build-components.sh [control-plane|nodes|conformance|conformance-upgrade].
# control-plane (the default, what the process-level proof boots) stops
# after etcd and the Kubernetes commands; nodes also builds what a node
# machine downloads and the registry and images serve; conformance also
# builds the conformance suite and its test images' programs (the node
# proof runs a subset of the suite, `make conformance` all of it);
# conformance-upgrade also builds them again at the upgrade's release
# (`make conformance CONFORMANCE_UPGRADE=1` runs that suite after the
# upgrade), which no default run pays for.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="${E2E_BIN_DIR:-$here/.work/bin}"
mkdir -p "$bin_dir"

# kube_ldflags_for VERSION: the linker flags that stamp a Kubernetes build
# with its release (what --version and the Node's kubeletVersion show).
kube_ldflags_for() {
	local version="$1" minor
	minor="${version#v1.}"
	minor="${minor%%.*}"
	echo "-s -w \
 -X k8s.io/component-base/version.gitVersion=${version} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=${minor} \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=${version} \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
}
kube_version="v1.35.4"
kube_ldflags="$(kube_ldflags_for "$kube_version")"
# The release the node proof's upgrade moves its cluster to, and the
# CoreDNS that release runs: the same main packages built against other
# module files (components/kube/kubernetes-<v>.mod,
# components/coredns/coredns-<v>.mod) into a folder named by the release.
next_kube_version="v1.36.3"
next_coredns_version="v1.14.2"
etcd_ldflags="-s -w"
containerd_version="v2.2.9"
containerd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=${containerd_version}"
runc_version="v1.3.6"
cni_version="v1.9.1"

export CGO_ENABLED=0

# stamp prints a digest of everything that decides a module's binaries.
stamp() {
	local dir="$1" ldflags="$2"
	{
		go version
		echo "$ldflags"
		find "$dir" -type f \( -name '*.go' -o -name '*.mod' -o -name '*.sum' \) -print0 |
			sort -z | xargs -0 sha256sum
	} | sha256sum | cut -d' ' -f1
}

# up_to_date NAME WANT BINARIES...: whether NAME's stamp is WANT and every
# binary is there (and says so).
up_to_date() {
	local name="$1" want="$2" have="" b
	shift 2
	[[ -f "$bin_dir/.$name.stamp" ]] && have="$(cat "$bin_dir/.$name.stamp")"
	[[ "$want" == "$have" ]] || return 1
	for b in "$@"; do
		[[ -x "$bin_dir/$b" ]] || return 1
	done
	echo "build-components: $name up to date ($*)"
}

# build_module builds every main package of one module, unless its stamp matches.
build_module() {
	local name="$1" ldflags="$2"
	shift 2
	build_main_packages "$name" "$name" "" "$ldflags" "" "$@"
}

# build_module_release MODULE MODFILE_PREFIX VERSION LDFLAGS BINARIES...:
# one module's main packages built against its VERSION module file
# (go build -modfile) into bin_dir/VERSION/, unless its stamp matches.
build_module_release() {
	local name="$1" prefix="$2" version="$3" ldflags="$4"
	shift 4
	local binaries=()
	for b in "$@"; do binaries+=("$version/$b"); done
	build_main_packages "$name" "$name-$version" "-modfile=$prefix-$version.mod" "$ldflags" "$version/" "${binaries[@]}"
}

# build_main_packages MODULE STAMP_NAME MODFLAG LDFLAGS SUBDIR BINARIES...
build_main_packages() {
	local name="$1" stamp_name="$2" modflag="$3" ldflags="$4" subdir="$5"
	shift 5
	local dir="$here/components/$name" want
	want="$(stamp "$dir" "$ldflags $modflag")"
	up_to_date "$stamp_name" "$want" "$@" && return 0
	echo "build-components: building $stamp_name ($*)"
	local start=$SECONDS
	mkdir -p "$bin_dir/$subdir"
	# shellcheck disable=SC2086 # modflag is one flag or none
	(cd "$dir" && go build $modflag -ldflags="$ldflags" -o "$bin_dir/$subdir" ./...)
	echo "$want" >"$bin_dir/.$stamp_name.stamp"
	echo "build-components: $stamp_name built in $((SECONDS - start))s"
}

# build_conformance [VERSION] builds the suite and the test images'
# programs from components/conformance, unless its stamp matches: at the
# founding release from go.mod into bin_dir, or at VERSION (the upgrade's
# release, so a cluster moved there is judged by that release's own tests)
# from the module file kubernetes-VERSION.mod into bin_dir/VERSION/, as
# the Kubernetes commands' second release is built. e2e.test is a test
# binary of a dependency's package (`go test -c`); the others are the
# module's `tool` lines.
build_conformance() {
	local version="${1:-}" dir="$here/components/conformance" want
	local tools=(github.com/onsi/ginkgo/v2/ginkgo k8s.io/kubernetes/test/images/agnhost
		k8s.io/kubernetes/test/images/nonewprivs k8s.io/sample-apiserver)
	local bins=(e2e.test ginkgo agnhost nonewprivs sample-apiserver)
	local name=conformance modflag="" subdir="" ldflags="$kube_ldflags"
	if [[ -n "$version" ]]; then
		name="conformance-$version" modflag="-modfile=kubernetes-$version.mod" subdir="$version/"
		ldflags="$(kube_ldflags_for "$version")"
	fi
	want="$(stamp "$dir" "$ldflags$modflag")"
	up_to_date "$name" "$want" "${bins[@]/#/$subdir}" && return 0
	echo "build-components: building $name (${bins[*]})"
	local start=$SECONDS
	mkdir -p "$bin_dir/$subdir"
	# shellcheck disable=SC2086 # modflag is one flag or none
	(cd "$dir" && go test -c $modflag -vet=off -ldflags="$ldflags" -o "$bin_dir/${subdir}e2e.test" k8s.io/kubernetes/test/e2e &&
		go build $modflag -ldflags="$ldflags" -o "$bin_dir/$subdir" "${tools[@]}")
	echo "$want" >"$bin_dir/.$name.stamp"
	echo "build-components: $name built in $((SECONDS - start))s"
}

set_name="${1:-control-plane}"
case "$set_name" in
control-plane | nodes | conformance | conformance-upgrade) ;;
*)
	echo "usage: $0 [control-plane|nodes|conformance|conformance-upgrade]" >&2
	exit 2
	;;
esac

build_module etcd "$etcd_ldflags" etcd etcdctl etcdutl
build_module kube "$kube_ldflags" kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl

report_versions() {
	# Whole outputs captured first: `| head` would SIGPIPE the binary under pipefail.
	local etcd_version
	etcd_version="$("$bin_dir/etcd" --version)"
	echo "${etcd_version%%$'\n'*}"
	"$bin_dir/kube-apiserver" --version
}
if [[ "$set_name" == control-plane ]]; then
	report_versions
	exit 0
fi

build_module pause "-s -w" pause
build_module containerd "$containerd_ldflags" containerd containerd-shim-runc-v2 ctr
build_module coredns "-s -w" coredns
build_module registry "-s -w" registry
build_module_release kube kubernetes "$next_kube_version" "$(kube_ldflags_for "$next_kube_version")" \
	kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
build_module_release coredns coredns "$next_coredns_version" "-s -w" coredns

# build_cgo_tool NAME PKG BINARY LDFLAGS: a module's `tool` command built
# with cgo and linked static (it runs in an image over the node's root
# filesystem), unless NAME's stamp matches.
build_cgo_tool() {
	local name="$1" pkg="$2" binary="$3" ldflags="$4" dir want
	dir="$here/components/$name"
	want="$(stamp "$dir" "$ldflags")"
	up_to_date "$name" "$want" "$binary" && return 0
	echo "build-components: building $name ($binary)"
	local start=$SECONDS
	(cd "$dir" && CGO_ENABLED=1 go build -tags netgo,osusergo \
		-ldflags="$ldflags -linkmode external -extldflags -static" -o "$bin_dir/$binary" "$pkg")
	echo "$want" >"$bin_dir/.$name.stamp"
	echo "build-components: $name built in $((SECONDS - start))s"
}
# flannel's udp backend is C (cgo), though the proof uses host-gw.
build_cgo_tool flannel github.com/flannel-io/flannel flanneld \
	"-s -w -X github.com/flannel-io/flannel/pkg/version.Version=v0.28.10"

# install_upstream NAME ENV PKG@VERSION...: go install each upstream
# command into bin_dir, unless NAME's stamp (Go version, env, packages)
# matches.
install_upstream() {
	local name="$1" env="$2" want have=""
	shift 2
	want="$({
		go version
		echo "$env $*"
	} | sha256sum | cut -d' ' -f1)"
	[[ -f "$bin_dir/.$name.stamp" ]] && have="$(cat "$bin_dir/.$name.stamp")"
	if [[ "$want" == "$have" ]]; then
		echo "build-components: $name up to date"
		return 0
	fi
	echo "build-components: installing $name ($*)"
	local start=$SECONDS
	# shellcheck disable=SC2086 # env is a list of VAR=value words
	env GOBIN="$bin_dir" $env go install -ldflags="-s -w" "$@"
	echo "$want" >"$bin_dir/.$name.stamp"
	echo "build-components: $name installed in $((SECONDS - start))s"
}

# runc's nsenter is C: cgo, and libseccomp for seccomp profiles.
install_upstream runc "CGO_ENABLED=1 GOFLAGS=-tags=seccomp" "github.com/opencontainers/runc@${runc_version}"
cni=github.com/containernetworking/plugins/plugins
install_upstream cni-plugins "CGO_ENABLED=0" "$cni/main/bridge@${cni_version}" \
	"$cni/ipam/host-local@${cni_version}" "$cni/main/loopback@${cni_version}" "$cni/meta/portmap@${cni_version}" \
	"$cni/meta/firewall@${cni_version}"

if [[ "$set_name" == conformance* ]]; then
	build_conformance
fi
if [[ "$set_name" == conformance-upgrade ]]; then
	build_conformance "$next_kube_version"
fi
report_versions
