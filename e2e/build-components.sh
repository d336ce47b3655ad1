#!/usr/bin/env bash
# Builds the real control-plane components the end-to-end proof boots:
#   etcd                     from go.etcd.io/etcd/server/v3 (etcdmain)
#   kube-apiserver,
#   kube-controller-manager,
#   kube-scheduler           from k8s.io/kubernetes (cmd/<name>/app)
# into e2e/.work/bin/ (or $E2E_BIN_DIR). Each module under components/ pins
# its versions; GOCACHE keeps a rebuild fast. A component whose inputs (its
# module files, the Go version and the flags below) did not change since the
# last build is not linked again, so a second run returns in about a second.
#
# Cold: several minutes on two cores. Warm cache: about two minutes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="${E2E_BIN_DIR:-$here/.work/bin}"
mkdir -p "$bin_dir"

kube_version="v1.35.4"
kube_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${kube_version} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=35 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=${kube_version} \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=35"
etcd_ldflags="-s -w"

export CGO_ENABLED=0

# stamp prints a digest of everything that decides a module's binaries.
stamp() {
	local dir="$1" ldflags="$2"
	{
		go version
		echo "$ldflags"
		find "$dir" -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 |
			sort -z | xargs -0 sha256sum
	} | sha256sum | cut -d' ' -f1
}

# build_module builds every main package of one module, unless its stamp matches.
build_module() {
	local name="$1" ldflags="$2"
	shift 2
	local dir="$here/components/$name" want have="" missing=0 b
	want="$(stamp "$dir" "$ldflags")"
	if [[ -f "$bin_dir/.$name.stamp" ]]; then
		have="$(cat "$bin_dir/.$name.stamp")"
	fi
	for b in "$@"; do
		[[ -x "$bin_dir/$b" ]] || missing=1
	done
	if [[ "$want" == "$have" && "$missing" == 0 ]]; then
		echo "build-components: $name up to date ($*)"
		return 0
	fi
	echo "build-components: building $name ($*)"
	local start=$SECONDS
	(cd "$dir" && go build -ldflags="$ldflags" -o "$bin_dir/" ./...)
	echo "$want" >"$bin_dir/.$name.stamp"
	echo "build-components: $name built in $((SECONDS - start))s"
}

build_module etcd "$etcd_ldflags" etcd
build_module kube "$kube_ldflags" kube-apiserver kube-controller-manager kube-scheduler

# Whole outputs captured first: `| head` would SIGPIPE the binary under pipefail.
etcd_version="$("$bin_dir/etcd" --version)"
echo "${etcd_version%%$'\n'*}"
"$bin_dir/kube-apiserver" --version
