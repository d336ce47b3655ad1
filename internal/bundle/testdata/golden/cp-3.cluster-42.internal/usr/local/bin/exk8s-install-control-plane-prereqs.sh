#!/usr/bin/env bash
# exk8s-install-control-plane-prereqs.sh [all|helm]
#
# Prepares a control-plane host: OS packages, kernel settings, containerd,
# runc and the CNI plugins from their release artifacts (configured here),
# the kubelet, kubectl and etcd binaries, and helm when the cluster's CNI is
# Cilium (the addons script installs Cilium with it; a bridge CNI cluster
# has no use for helm and never downloads it). Every download is checked
# against a SHA-256 before it is installed: the digest pinned in
# /etc/exk8s/config/artifacts.sha256 if there is one, else the digest
# published beside the artifact. A mismatch stops the bootstrap.
# Download bases and versions come from cluster.env, so pointing them at a
# mirror is all an air-gapped install needs. A full run reports
# prerequisites_installed to k8sapi (or failed, with the step).
set -euo pipefail
umask 022

CONFIG_DIR=/etc/exk8s/config
CLUSTER_ENV="${CONFIG_DIR}/cluster.env"
ARTIFACT_MANIFEST="${CONFIG_DIR}/artifacts.sha256"
BIN_DIR=/usr/local/bin

# shellcheck source=/dev/null
. /usr/local/bin/exk8s-progress.sh
progress_begin exk8s-install-control-plane-prereqs

log() { printf '%s exk8s-prereqs: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

step "reading ${CLUSTER_ENV}"
[[ -f "$CLUSTER_ENV" ]] || die "missing ${CLUSTER_ENV}"
set -a
# shellcheck source=/dev/null
. "$CLUSTER_ENV"
set +a
: "${KUBERNETES_VERSION:?KUBERNETES_VERSION missing from cluster.env}"
: "${KUBE_DOWNLOAD_BASE:?KUBE_DOWNLOAD_BASE missing from cluster.env}"
: "${ETCD_VERSION:?ETCD_VERSION missing from cluster.env}"
: "${ETCD_DOWNLOAD_BASE:?ETCD_DOWNLOAD_BASE missing from cluster.env}"
: "${CNI:?CNI missing from cluster.env}"
if [[ "$CNI" == cilium ]]; then
  : "${HELM_VERSION:?HELM_VERSION missing from cluster.env}"
  : "${HELM_DOWNLOAD_BASE:?HELM_DOWNLOAD_BASE missing from cluster.env}"
fi
: "${CONTAINERD_VERSION:?CONTAINERD_VERSION missing from cluster.env}"
: "${CONTAINERD_DOWNLOAD_BASE:?CONTAINERD_DOWNLOAD_BASE missing from cluster.env}"
: "${RUNC_VERSION:?RUNC_VERSION missing from cluster.env}"
: "${RUNC_DOWNLOAD_BASE:?RUNC_DOWNLOAD_BASE missing from cluster.env}"
: "${CNI_PLUGINS_VERSION:?CNI_PLUGINS_VERSION missing from cluster.env}"
: "${CNI_PLUGINS_DOWNLOAD_BASE:?CNI_PLUGINS_DOWNLOAD_BASE missing from cluster.env}"
: "${IMAGE_REGISTRY:?IMAGE_REGISTRY missing from cluster.env}"
: "${PAUSE_VERSION:?PAUSE_VERSION missing from cluster.env}"

case "$(uname -m)" in
  x86_64 | amd64) ARCH=amd64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) die "unsupported architecture $(uname -m)" ;;
esac

# fetch URL OUT: download with curl's own retries, wrapped in ours.
fetch() {
  retry 3 5 curl -fsSL --connect-timeout 10 --retry 5 --retry-delay 3 --retry-connrefused -o "$2" "$1"
}

# pinned_sha256 FILE: the digest pinned for an artifact file name, if any.
pinned_sha256() {
  [[ -f "$ARTIFACT_MANIFEST" ]] || return 0
  awk -v f="$1" '$1 !~ /^#/ && NF >= 2 && $2 == f { print tolower($1); exit }' "$ARTIFACT_MANIFEST"
}

# published_sha256 SUMS_URL FILE: the digest published at SUMS_URL, which is
# either a bare digest (dl.k8s.io) or "<digest>  <file>" lines (etcd, helm).
published_sha256() {
  local sums
  sums="$(mktemp)"
  if ! fetch "$1" "$sums"; then
    rm -f "$sums"
    return 0
  fi
  awk -v f="$2" '
    NF == 1 && !found { print tolower($1); found = 1 }
    NF >= 2 { name = $2; sub(/^\*/, "", name); if (name == f && !found) { print tolower($1); found = 1 } }
  ' "$sums"
  rm -f "$sums"
}

# download_verified URL FILE SUMS_URL OUT: download URL to OUT and check it
# against the pinned digest of FILE, else the one published at SUMS_URL.
download_verified() {
  local url=$1 file=$2 sums_url=$3 out=$4 want got source
  want="$(pinned_sha256 "$file")"
  source="$ARTIFACT_MANIFEST"
  if [[ -z "$want" ]]; then
    want="$(published_sha256 "$sums_url" "$file")"
    source="$sums_url"
  fi
  [[ "$want" =~ ^[0-9a-f]{64}$ ]] ||
    die "no SHA-256 for ${file}: not pinned in ${ARTIFACT_MANIFEST} and none published at ${sums_url}; refusing to install it"
  log "downloading ${url}"
  fetch "$url" "$out" || die "download failed: ${url}"
  got="$(sha256sum "$out" | awk '{ print $1 }')"
  if [[ "$got" != "$want" ]]; then
    rm -f "$out"
    die "SHA-256 MISMATCH for ${file} from ${url}: expected ${want} (from ${source}), got ${got}; bootstrap stopped"
  fi
  log "verified ${file} (sha256 ${got})"
}

# host_tools: command and the Debian package that brings it, for the tools
# the kubelet, kube-proxy and these scripts run on the host.
host_tools=(conntrack:conntrack curl:curl ebtables:ebtables ethtool:ethtool ip:iproute2
  iptables:iptables jq:jq nft:nftables socat:socat update-ca-certificates:ca-certificates)

# install_packages installs the host tools that are missing, so an image
# that already has them (an air-gapped one) never needs a package mirror.
install_packages() {
  local tool missing=()
  for tool in "${host_tools[@]}"; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  if ((${#missing[@]} == 0)); then
    log "host tools present; no packages to install"
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install ${missing[*]} by other means"
  export DEBIAN_FRONTEND=noninteractive
  retry 5 10 apt-get update -y || die "apt-get update failed"
  retry 5 10 apt-get install -y "${missing[@]}" || die "apt-get install ${missing[*]} failed"
}

install_container_runtime() {
  local file url tmp
  tmp="$(mktemp -d)"
  file="containerd-${CONTAINERD_VERSION#v}-linux-${ARCH}.tar.gz"
  url="${CONTAINERD_DOWNLOAD_BASE%/}/${CONTAINERD_VERSION}/${file}"
  download_verified "$url" "$file" "${url}.sha256sum" "${tmp}/${file}"
  tar -xzf "${tmp}/${file}" -C /usr/local bin/
  url="${RUNC_DOWNLOAD_BASE%/}/${RUNC_VERSION}/runc.${ARCH}"
  download_verified "$url" "runc-${RUNC_VERSION}-linux-${ARCH}" "${RUNC_DOWNLOAD_BASE%/}/${RUNC_VERSION}/runc.sha256sum" "${tmp}/runc"
  install -m 0755 "${tmp}/runc" /usr/local/sbin/runc
  file="cni-plugins-linux-${ARCH}-${CNI_PLUGINS_VERSION}.tgz"
  url="${CNI_PLUGINS_DOWNLOAD_BASE%/}/${CNI_PLUGINS_VERSION}/${file}"
  download_verified "$url" "$file" "${url}.sha256" "${tmp}/${file}"
  mkdir -p /opt/cni/bin
  tar -xzf "${tmp}/${file}" -C /opt/cni/bin
  rm -rf "$tmp"
}

configure_kernel() {
  cat >/etc/modules-load.d/exk8s.conf <<'MODULES'
overlay
br_netfilter
MODULES
  modprobe overlay || true
  modprobe br_netfilter || true
  cat >/etc/sysctl.d/90-exk8s.conf <<'SYSCTL'
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward = 1
SYSCTL
  sysctl --system >/dev/null || log "sysctl --system reported errors"
}

# configure_containerd: containerd's defaults with the kubelet's cgroup
# driver (systemd), the sandbox (pause) image from IMAGE_REGISTRY, and
# registry host configs under /etc/containerd/certs.d, where a mirror's
# hosts.toml goes. Host-specific overrides go in /etc/containerd/conf.d/,
# which containerd's default config imports, never into config.toml.
configure_containerd() {
  local config=/etc/containerd/config.toml registry_host="${IMAGE_REGISTRY%%/*}"
  mkdir -p /etc/containerd/conf.d "/etc/containerd/certs.d/${registry_host}"
  /usr/local/bin/containerd config default >"$config"
  sed -i -E 's/SystemdCgroup = false/SystemdCgroup = true/' "$config"
  sed -i -E "s#^([[:space:]]*sandbox(_image)?[[:space:]]*=[[:space:]]*).*#\\1'${IMAGE_REGISTRY}/pause:${PAUSE_VERSION}'#" "$config"
  sed -i -E "s#^([[:space:]]*config_path[[:space:]]*=[[:space:]]*)''#\\1'/etc/containerd/certs.d'#" "$config"
  grep -q "SystemdCgroup = true" "$config" || die "containerd config: no SystemdCgroup setting to turn on"
  grep -q "${IMAGE_REGISTRY}/pause:${PAUSE_VERSION}" "$config" || die "containerd config: no sandbox image setting"
  cat >"/etc/containerd/certs.d/${registry_host}/hosts.toml" <<HOSTS
server = "https://${registry_host}"

[host."https://${registry_host}"]
  capabilities = ["pull", "resolve"]
HOSTS
  systemctl daemon-reload
  systemctl enable containerd >/dev/null 2>&1 || true
  systemctl restart containerd || log "containerd restart failed; the bootstrap script retries"
}

install_kube_binaries() {
  local bin url tmp
  tmp="$(mktemp -d)"
  for bin in kubelet kubectl; do
    url="${KUBE_DOWNLOAD_BASE%/}/${KUBERNETES_VERSION}/bin/linux/${ARCH}/${bin}"
    download_verified "$url" "${bin}-${KUBERNETES_VERSION}-linux-${ARCH}" "${url}.sha256" "${tmp}/${bin}"
    install -m 0755 "${tmp}/${bin}" "${BIN_DIR}/${bin}"
  done
  rm -rf "$tmp"
}

install_etcd() {
  local file url tmp
  file="etcd-${ETCD_VERSION}-linux-${ARCH}.tar.gz"
  url="${ETCD_DOWNLOAD_BASE%/}/${ETCD_VERSION}/${file}"
  tmp="$(mktemp -d)"
  download_verified "$url" "$file" "${ETCD_DOWNLOAD_BASE%/}/${ETCD_VERSION}/SHA256SUMS" "${tmp}/${file}"
  tar -xzf "${tmp}/${file}" -C "$tmp" --strip-components=1
  install -m 0755 "${tmp}/etcd" "${tmp}/etcdctl" "$BIN_DIR/"
  if [[ -f "${tmp}/etcdutl" ]]; then
    install -m 0755 "${tmp}/etcdutl" "$BIN_DIR/"
  fi
  rm -rf "$tmp"
}

install_helm() {
  local file url tmp
  file="helm-${HELM_VERSION}-linux-${ARCH}.tar.gz"
  url="${HELM_DOWNLOAD_BASE%/}/${file}"
  tmp="$(mktemp -d)"
  download_verified "$url" "$file" "${url}.sha256sum" "${tmp}/${file}"
  tar -xzf "${tmp}/${file}" -C "$tmp"
  install -m 0755 "${tmp}/linux-${ARCH}/helm" "${BIN_DIR}/helm"
  rm -rf "$tmp"
}

make_dirs() {
  mkdir -p /etc/exk8s/pki /etc/exk8s/kubeconfig /etc/exk8s/config /etc/exk8s/manifests \
    /etc/kubernetes/manifests /var/lib/kubelet /var/log/exk8s
  mkdir -p /var/lib/etcd
  chmod 0700 /var/lib/etcd
}

main() {
  case "${1:-all}" in
    all)
      step "installing OS packages"
      install_packages
      step "configuring the kernel"
      configure_kernel
      step "installing containerd, runc and the CNI plugins"
      install_container_runtime
      step "configuring containerd"
      configure_containerd
      make_dirs
      step "installing kubelet and kubectl ${KUBERNETES_VERSION}"
      install_kube_binaries
      step "installing etcd ${ETCD_VERSION}"
      install_etcd
      if [[ "$CNI" == cilium ]]; then
        step "installing helm ${HELM_VERSION}"
        install_helm
      fi
      ;;
    helm)
      [[ "$CNI" == cilium ]] || die "this cluster's CNI is ${CNI}: only Cilium is installed with helm"
      step "installing helm ${HELM_VERSION}"
      install_helm
      ;;
    *) die "usage: $0 [all|helm]" ;;
  esac
  log "prerequisites installed (${1:-all})"
  if [[ "${1:-all}" == "all" ]]; then
    progress_report prerequisites_installed
  fi
}

main "$@"
