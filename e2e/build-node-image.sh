#!/usr/bin/env bash
# Builds the node image the node proof boots with systemd-nspawn: a Debian
# bookworm root filesystem made by debootstrap, holding what a cloud image
# holds (systemd as init, dbus, a shell, curl, jq, iptables, iproute2,
# conntrack, ...) and no Kubernetes: every Kubernetes piece reaches the node
# the way it reaches a VM, through its userdata and the bundle's scripts.
#
# bookworm, not trixie: trixie's systemd (257) refuses to boot on cgroup v1,
# and the machines this runs on are cgroup v1 hosts.
#
# `build-node-image.sh test-images` builds, by the same steps, the Debian
# userland the conformance suite's test images are made of, and the
# busybox image's root beside it: e2e/.work/test-images/{rootfs,busybox}
# (or under $E2E_TEST_IMAGES_DIR).
#
# Output: e2e/.work/node-image/rootfs (or $E2E_NODE_IMAGE_DIR/rootfs), with a
# stamp file holding the digest of the recipe below. The image is rebuilt
# only when the recipe changes (package list, suite, recipe version, or this
# script's customisation steps): a second run returns at once.
#
# Cold: about three minutes on two cores (debootstrap fetches and unpacks).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recipe="${1:-node}"
case "$recipe" in
node) image_dir="${E2E_NODE_IMAGE_DIR:-$here/.work/node-image}" ;;
test-images) image_dir="${E2E_TEST_IMAGES_DIR:-$here/.work/test-images}" ;;
*)
	echo "usage: $0 [node|test-images]" >&2
	exit 2
	;;
esac
stamp_file="$image_dir/stamp"

# Bump to force a rebuild with nothing else changed (for instance to take
# Debian's latest security updates).
recipe_version=1
suite=bookworm
mirror="${E2E_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What a Debian cloud image brings that a node bring-up relies on.
node_packages=(
	systemd systemd-sysv systemd-resolved dbus libpam-systemd
	bash coreutils util-linux mount procps kmod less
	ca-certificates curl jq openssl
	iproute2 iptables nftables ebtables conntrack ethtool socat iputils-ping
	libseccomp2 tar gzip
)
# What the conformance suite's test images run inside their containers
# (e2e/README.md: how each image is made): agnhost's shell tools (curl, nc,
# dig, ip, iperf), the DNS utils image's dig and getent, and nginx.
test_image_packages=(
	bash coreutils procps ca-certificates curl netcat-openbsd bind9-dnsutils
	iproute2 iperf nginx-light passwd
)
# The busybox image's busybox: upstream's source as released (Debian's
# archive keeps the release tarball byte for byte), built static with its
# default configuration. Not Debian's build: Debian reverts upstream's ash
# keeping variables whose names are not identifiers (data-1=value-1, which a
# ConfigMap or Secret may hold) for the commands it runs, and the suite
# checks both that and ash's own messages ("can't create /file").
busybox_version=1.37.0
busybox_sha256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4

# customise_node ROOTFS: what the node image holds beyond its packages.
customise_node() {
	local root="$1"
	# minbase writes no /etc/hosts; containerd's CRI refuses a sandbox
	# without one, and every cloud image has it.
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
	# A machine runs on the host's kernel, so the image holds no kernel and
	# no modules; a cloud image has /lib/modules, which kube-proxy mounts.
	mkdir -p "$root/lib/modules"
	# Each node makes its own machine id on first boot, as a cloud VM does.
	: >"$root/etc/machine-id"
	rm -f "$root/var/lib/dbus/machine-id"
	# No console login in a test machine: a getty on nspawn's read-only
	# console would only fail and mark the machine degraded.
	chroot "$root" systemctl mask console-getty.service getty@tty1.service >/dev/null 2>&1
	install -D -m 0755 "$here/node-image/cloud-init-standin" "$root/usr/lib/cloud-init-standin/run"
	install -D -m 0644 "$here/node-image/cloud-init-standin.service" \
		"$root/etc/systemd/system/cloud-init-standin.service"
	chroot "$root" systemctl enable cloud-init-standin.service >/dev/null 2>&1
	# Adaptations of a node to this sandbox (e2e/README.md lists each with
	# its reason): writable cgroup controllers, and the host facts the
	# kubelet and containerd take from their drop-in directories.
	install -D -m 0755 "$here/node-image/sandbox-cgroups" "$root/usr/lib/cloud-init-standin/sandbox-cgroups"
	install -D -m 0644 "$here/node-image/sandbox-cgroups.service" "$root/etc/systemd/system/sandbox-cgroups.service"
	chroot "$root" systemctl enable sandbox-cgroups.service >/dev/null 2>&1
	install -D -m 0755 "$here/node-image/sandbox-kernel-tunables" "$root/usr/lib/cloud-init-standin/sandbox-kernel-tunables"
	install -D -m 0644 "$here/node-image/sandbox-kernel-tunables.service" \
		"$root/etc/systemd/system/sandbox-kernel-tunables.service"
	chroot "$root" systemctl enable sandbox-kernel-tunables.service >/dev/null 2>&1
	install -D -m 0644 "$here/node-image/kubelet-sandbox-cgroup-v1.conf" \
		"$root/etc/kubernetes/kubelet.conf.d/90-sandbox-cgroup-v1.conf"
	install -D -m 0644 "$here/node-image/kubelet-sandbox-shared-disk.conf" \
		"$root/etc/kubernetes/kubelet.conf.d/90-sandbox-shared-disk.conf"
	install -D -m 0644 "$here/node-image/containerd-sandbox.toml" "$root/etc/containerd/conf.d/90-sandbox.toml"
	install -D -m 0644 "$here/node-image/resolved-sandbox.conf" "$root/etc/systemd/resolved.conf.d/90-sandbox.conf"
	chroot "$root" apt-get clean
	rm -rf "$root/var/lib/apt/lists/"*
}

# customise_test_images STAGING: the test images' users and folders in the
# Debian userland, and beside it the busybox image's root: upstream's
# busybox with every applet under /bin, as upstream's busybox image has
# them.
customise_test_images() {
	local root="$1/rootfs" bb="$1/busybox" applet
	chroot "$root" groupadd -g 50000 group-defined-in-image
	chroot "$root" useradd -u 1000 -G group-defined-in-image -M user-defined-in-image
	mkdir -p "$root/uploads"
	chroot "$root" apt-get clean
	rm -rf "$root/var/lib/apt/lists/"*
	mkdir -p "$bb/bin" "$bb/etc" "$bb/root" "$bb/home" "$bb/var" "$bb/usr/bin" "$bb/usr/sbin" "$bb/sbin"
	install -d -m 1777 "$bb/tmp"
	build_busybox "$1/busybox-src" "$bb/bin/busybox"
	for applet in $("$bb/bin/busybox" --list); do
		[[ "$applet" == busybox ]] || ln -sf busybox "$bb/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$bb/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\n' >"$bb/etc/group"
}

# build_busybox SRC OUT: upstream's busybox release, verified against its
# pin, built static with its default configuration into OUT. tc is left
# out: it does not build against current kernel headers (CBQ is gone).
build_busybox() {
	local src="$1" out="$2" tarball="$1/busybox-$busybox_version.tar.bz2"
	mkdir -p "$src"
	curl -fsSL --retry 3 -o "$tarball" "$mirror/pool/main/b/busybox/busybox_${busybox_version}.orig.tar.bz2"
	echo "$busybox_sha256  $tarball" | sha256sum -c --quiet
	tar -xjf "$tarball" -C "$src"
	(
		cd "$src/busybox-$busybox_version"
		make defconfig >/dev/null
		sed -i 's/^CONFIG_TC=y/# CONFIG_TC is not set/; s/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/' .config
		make -j"$(nproc)" busybox >"$src/build.log" 2>&1 || {
			tail -n 30 "$src/build.log" >&2
			exit 1
		}
	)
	install -m 0755 "$src/busybox-$busybox_version/busybox" "$out"
}

# customise STAGING: the recipe's own steps over the debootstrapped root.
customise() {
	case "$recipe" in
	node) customise_node "$1/rootfs" ;;
	test-images) customise_test_images "$1" ;;
	esac
}

packages=("${node_packages[@]}")
outputs=(rootfs)
if [[ "$recipe" == test-images ]]; then
	packages=("${test_image_packages[@]}")
	outputs=(rootfs busybox)
fi

want="$({
	echo "$recipe $recipe_version $suite $mirror"
	printf '%s\n' "${packages[@]}"
	# Contents only: the digest must not depend on how the script was called.
	cat "${BASH_SOURCE[0]}" "$here"/node-image/*
} | sha256sum | cut -d' ' -f1)"

if [[ -f "$stamp_file" && -d "$image_dir/rootfs" && "$(cat "$stamp_file")" == "$want" ]]; then
	echo "build-node-image: $recipe up to date ($image_dir)"
	exit 0
fi

for tool in debootstrap systemd-nspawn; do
	command -v "$tool" >/dev/null || {
		echo "build-node-image: $tool not found: apt-get install -y debootstrap systemd-container" >&2
		exit 1
	}
done

# Built beside the old image and swapped in whole, so an interrupted build
# never leaves a half image behind a current stamp.
mkdir -p "$image_dir"
staging="$(mktemp -d "$image_dir/build.XXXXXX")"
# An interrupted debootstrap leaves its /proc (and more) mounted in the
# staging root: unmount everything below it before removing it.
cleanup_staging() {
	local m
	{ grep -o " $staging/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$staging"
}
trap cleanup_staging EXIT
start=$SECONDS
echo "build-node-image: $recipe: debootstrap $suite (${#packages[@]} packages)"
include="$(
	IFS=,
	echo "${packages[*]}"
)"
debootstrap --variant=minbase --include="$include" "$suite" "$staging/rootfs" "$mirror" \
	>"$staging/debootstrap.log" 2>&1 || {
	tail -n 30 "$staging/debootstrap.log" >&2
	echo "build-node-image: debootstrap failed" >&2
	exit 1
}

customise "$staging"
rm -f "$stamp_file"
for out in "${outputs[@]}"; do
	rm -rf "${image_dir:?}/$out"
	mv "$staging/$out" "$image_dir/$out"
done
echo "$want" >"$stamp_file"
echo "build-node-image: $recipe built in $((SECONDS - start))s ($image_dir)"
