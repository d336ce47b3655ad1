#!/usr/bin/env bash
# exk8s-install-prereqs.sh [all|helm] (a worker's: [all])
#
# Prepares a host: OS packages, kernel settings, containerd, runc and the
# CNI plugins from their release artifacts (configured here), the kubelet
# and kubectl binaries; on a control-plane host etcd too, and helm when the
# cluster's CNI is Cilium (the addons script installs Cilium with it; a
# bridge CNI cluster has no use for helm and never downloads it). A
# worker's bundle renders it without etcd and helm. Every download is checked
# against the SHA-256 pinned in /etc/exk8s/config/artifacts.sha256 (the
# cluster's artifact manifest, recorded at founding). A download pinned
# nowhere is refused, unless cluster.env allows the published-digest
# fallback (ARTIFACT_DIGEST_FALLBACK=true): then the digest published beside
# the artifact is trusted. A mismatch stops the bootstrap.
# Download bases and versions are k8sapi's configuration (cluster.env shows
# them), so pointing them at a mirror is all an air-gapped install needs.
# A full run on a control-plane host reports prerequisites_installed to
# k8sapi (or failed, with the step); a worker has no such phase.
#
# Sourced instead of run (the tests), it only defines its functions.
set -euo pipefail
umask 022

ARTIFACT_MANIFEST=/etc/exk8s/config/artifacts.sha256
BIN_DIR=/usr/local/bin

# load_facts reads the cluster's facts (cluster.env) and names this host's
# architecture as the artifact manifest does. (What is downloaded from
# where is rendered into download_artifact, from the same facts.)
load_facts() {
  load_cluster_env KUBERNETES_VERSION ETCD_VERSION CNI IMAGE_REGISTRY PAUSE_VERSION
  if [[ "$CNI" == cilium ]]; then
    require_env HELM_VERSION
  fi
  case "$(uname -m)" in
    x86_64 | amd64) ARCH=amd64 ;;
    aarch64 | arm64) ARCH=arm64 ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
}

# download_artifact KEY OUT: download this host's KEY to OUT, verified. The
# rows are k8sapi's table of artifact files, rendered: the name the manifest
# pins it by, its URL, and its published digest's URL and entry.
download_artifact() {
  case "${ARCH}/$1" in
    amd64/kubelet) download_verified 'https://dl.k8s.io/v1.35.4/bin/linux/amd64/kubelet' 'kubelet-v1.35.4-linux-amd64' 'https://dl.k8s.io/v1.35.4/bin/linux/amd64/kubelet.sha256' '' "$2" ;;
    amd64/kubectl) download_verified 'https://dl.k8s.io/v1.35.4/bin/linux/amd64/kubectl' 'kubectl-v1.35.4-linux-amd64' 'https://dl.k8s.io/v1.35.4/bin/linux/amd64/kubectl.sha256' '' "$2" ;;
    amd64/etcd) download_verified 'https://github.com/etcd-io/etcd/releases/download/v3.6.10/etcd-v3.6.10-linux-amd64.tar.gz' 'etcd-v3.6.10-linux-amd64.tar.gz' 'https://github.com/etcd-io/etcd/releases/download/v3.6.10/SHA256SUMS' 'etcd-v3.6.10-linux-amd64.tar.gz' "$2" ;;
    amd64/containerd) download_verified 'https://github.com/containerd/containerd/releases/download/v2.2.9/containerd-2.2.9-linux-amd64.tar.gz' 'containerd-2.2.9-linux-amd64.tar.gz' 'https://github.com/containerd/containerd/releases/download/v2.2.9/containerd-2.2.9-linux-amd64.tar.gz.sha256sum' 'containerd-2.2.9-linux-amd64.tar.gz' "$2" ;;
    amd64/runc) download_verified 'https://github.com/opencontainers/runc/releases/download/v1.3.6/runc.amd64' 'runc-v1.3.6-linux-amd64' 'https://github.com/opencontainers/runc/releases/download/v1.3.6/runc.sha256sum' 'runc.amd64' "$2" ;;
    amd64/cni-plugins) download_verified 'https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz' 'cni-plugins-linux-amd64-v1.9.1.tgz' 'https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz.sha256' 'cni-plugins-linux-amd64-v1.9.1.tgz' "$2" ;;
    arm64/kubelet) download_verified 'https://dl.k8s.io/v1.35.4/bin/linux/arm64/kubelet' 'kubelet-v1.35.4-linux-arm64' 'https://dl.k8s.io/v1.35.4/bin/linux/arm64/kubelet.sha256' '' "$2" ;;
    arm64/kubectl) download_verified 'https://dl.k8s.io/v1.35.4/bin/linux/arm64/kubectl' 'kubectl-v1.35.4-linux-arm64' 'https://dl.k8s.io/v1.35.4/bin/linux/arm64/kubectl.sha256' '' "$2" ;;
    arm64/etcd) download_verified 'https://github.com/etcd-io/etcd/releases/download/v3.6.10/etcd-v3.6.10-linux-arm64.tar.gz' 'etcd-v3.6.10-linux-arm64.tar.gz' 'https://github.com/etcd-io/etcd/releases/download/v3.6.10/SHA256SUMS' 'etcd-v3.6.10-linux-arm64.tar.gz' "$2" ;;
    arm64/containerd) download_verified 'https://github.com/containerd/containerd/releases/download/v2.2.9/containerd-2.2.9-linux-arm64.tar.gz' 'containerd-2.2.9-linux-arm64.tar.gz' 'https://github.com/containerd/containerd/releases/download/v2.2.9/containerd-2.2.9-linux-arm64.tar.gz.sha256sum' 'containerd-2.2.9-linux-arm64.tar.gz' "$2" ;;
    arm64/runc) download_verified 'https://github.com/opencontainers/runc/releases/download/v1.3.6/runc.arm64' 'runc-v1.3.6-linux-arm64' 'https://github.com/opencontainers/runc/releases/download/v1.3.6/runc.sha256sum' 'runc.arm64' "$2" ;;
    arm64/cni-plugins) download_verified 'https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-arm64-v1.9.1.tgz' 'cni-plugins-linux-arm64-v1.9.1.tgz' 'https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-arm64-v1.9.1.tgz.sha256' 'cni-plugins-linux-arm64-v1.9.1.tgz' "$2" ;;
    *) die "no artifact ${1} for ${ARCH}" ;;
  esac
}

# fetch URL OUT: download, following redirects, with curl's own retries
# wrapped in ours (a download call).
fetch() {
  call download "$2" "$1" -L
}

# pinned_sha256 FILE: the digest pinned for an artifact file name, if any.
pinned_sha256() {
  [[ -f "$ARTIFACT_MANIFEST" ]] || return 0
  awk -v f="$1" '$1 !~ /^#/ && NF >= 2 && $2 == f { print tolower($1); exit }' "$ARTIFACT_MANIFEST"
}

# published_sha256 SUMS_URL ENTRY: the digest published at SUMS_URL: a bare
# digest (dl.k8s.io; ENTRY empty) or ENTRY's in "<digest>  <file>" lines.
published_sha256() {
  local sums
  sums="$(mktemp)"
  if ! fetch "$1" "$sums"; then
    rm -f "$sums"
    return 0
  fi
  awk -v f="$2" '
    f == "" && NF == 1 && !found { print tolower($1); found = 1 }
    NF >= 2 { name = $2; sub(/^\*/, "", name); if (name == f && !found) { print tolower($1); found = 1 } }
  ' "$sums"
  rm -f "$sums"
}

# download_verified URL FILE SUMS_URL SUMS_ENTRY OUT: download URL to OUT
# and check it against the digest pinned for FILE. Pinned nowhere, FILE is
# refused unless the cluster allows the fallback to the digest published at
# SUMS_URL (SUMS_ENTRY's, or the bare digest there).
download_verified() {
  local url=$1 file=$2 sums_url=$3 sums_entry=$4 out=$5 want got source
  want="$(pinned_sha256 "$file")"
  source="$ARTIFACT_MANIFEST"
  if [[ -z "$want" ]]; then
    [[ "${ARTIFACT_DIGEST_FALLBACK:-false}" == "true" ]] || die "$(unpinned_refusal "$file")"
    log "WARNING: ${file} is not pinned in ${ARTIFACT_MANIFEST}; trusting the digest published at ${sums_url} (ARTIFACT_DIGEST_FALLBACK=true)"
    want="$(published_sha256 "$sums_url" "$sums_entry")"
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

# unpinned_refusal FILE: why FILE is not downloaded, and the two fixes.
unpinned_refusal() {
  printf '%s' "${1} is not pinned in ${ARTIFACT_MANIFEST} and this cluster does not allow the published-digest" \
    " fallback (ARTIFACT_DIGEST_FALLBACK=false in ${CLUSTER_ENV}); refusing to download it. In k8sapi's" \
    " configuration, pin it (ARTIFACT_MANIFEST_FILE, or scripts/pin-artifacts.sh for the shipped manifest) or" \
    " allow the fallback (ARTIFACT_DIGEST_FALLBACK=true); a cluster keeps the artifact set it was founded with."
}

# host_tools: command and the Debian package that brings it, for the tools
# the kubelet, kube-proxy and these scripts run on the host.
host_tools=(conntrack:conntrack curl:curl ebtables:ebtables ethtool:ethtool ip:iproute2
  iptables:iptables jq:jq nft:nftables openssl:openssl socat:socat update-ca-certificates:ca-certificates)

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
  apt_install "${missing[@]}"
}

# download_all DIR KEY...: every KEY at once into DIR/KEY, each verified
# (a host waits for the slowest download, not for their sum); any failure
# stops the bootstrap once all have ended.
download_all() {
  local dir=$1 key pids=() failed=()
  shift
  for key in "$@"; do
    download_artifact "$key" "${dir}/${key}" &
    pids+=("$!")
  done
  for key in "$@"; do
    wait "${pids[0]}" || failed+=("$key")
    pids=("${pids[@]:1}")
  done
  ((${#failed[@]} == 0)) || die "download failed: ${failed[*]} (see above)"
}

# host_artifacts: what this host downloads: the container runtime, the
# kubelet and kubectl; a control-plane host's etcd, and helm for a Cilium
# cluster.
host_artifacts() {
  echo containerd runc cni-plugins kubelet kubectl etcd
  if [[ "$CNI" == cilium ]]; then
    echo helm
  fi
}

install_container_runtime() {
  tar -xzf "${DOWNLOADS}/containerd" -C /usr/local bin/
  install -m 0755 "${DOWNLOADS}/runc" /usr/local/sbin/runc
  mkdir -p /opt/cni/bin
  tar -xzf "${DOWNLOADS}/cni-plugins" -C /opt/cni/bin
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
  local config=/etc/containerd/config.toml
  mkdir -p /etc/containerd/conf.d
  /usr/local/bin/containerd config default >"$config"
  sed -i -E 's/SystemdCgroup = false/SystemdCgroup = true/' "$config"
  sed -i -E "s#^([[:space:]]*sandbox(_image)?[[:space:]]*=[[:space:]]*).*#\\1'${IMAGE_REGISTRY}/pause:${PAUSE_VERSION}'#" "$config"
  sed -i -E "s#^([[:space:]]*config_path[[:space:]]*=[[:space:]]*)''#\\1'/etc/containerd/certs.d'#" "$config"
  grep -q "SystemdCgroup = true" "$config" || die "containerd config: no SystemdCgroup setting to turn on"
  grep -q "${IMAGE_REGISTRY}/pause:${PAUSE_VERSION}" "$config" || die "containerd config: no sandbox image setting"
  write_registry_hosts /etc/containerd/certs.d
  systemctl daemon-reload
  systemctl enable containerd >/dev/null 2>&1 || true
  systemctl restart containerd || log "containerd restart failed; the bootstrap script retries"
}

# write_registry_hosts DIR: containerd's host config for IMAGE_REGISTRY's
# host under DIR: https, or plain HTTP when IMAGE_REGISTRY_PLAIN_HTTP=true
# (a registry on a private network, as kind's local registry).
write_registry_hosts() {
  local host="${IMAGE_REGISTRY%%/*}" scheme=https
  if [[ "${IMAGE_REGISTRY_PLAIN_HTTP:-false}" == "true" ]]; then
    scheme=http
  fi
  mkdir -p "${1}/${host}"
  cat >"${1}/${host}/hosts.toml" <<HOSTS
server = "${scheme}://${host}"

[host."${scheme}://${host}"]
  capabilities = ["pull", "resolve"]
HOSTS
}

install_kube_binaries() {
  install -m 0755 "${DOWNLOADS}/kubelet" "${DOWNLOADS}/kubectl" "${BIN_DIR}/"
}

install_etcd() {
  local tmp
  tmp="$(mktemp -d)"
  tar -xzf "${DOWNLOADS}/etcd" -C "$tmp" --strip-components=1
  install -m 0755 "${tmp}/etcd" "${tmp}/etcdctl" "$BIN_DIR/"
  if [[ -f "${tmp}/etcdutl" ]]; then
    install -m 0755 "${tmp}/etcdutl" "$BIN_DIR/"
  fi
  rm -rf "$tmp"
}

install_helm() {
  local tmp
  tmp="$(mktemp -d)"
  tar -xzf "${DOWNLOADS}/helm" -C "$tmp"
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
  # shellcheck source=/dev/null
  . /usr/local/bin/exk8s-progress.sh
  progress_begin exk8s-install-prereqs exk8s-prereqs
  step "reading ${CLUSTER_ENV}"
  load_facts
  DOWNLOADS="$(mktemp -d)"
  case "${1:-all}" in
    all)
      step "installing OS packages"
      install_packages
      step "configuring the kernel"
      configure_kernel
      step "downloading $(host_artifacts | xargs), at once"
      # shellcheck disable=SC2046 # one key per word
      download_all "$DOWNLOADS" $(host_artifacts)
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
      download_all "$DOWNLOADS" helm
      install_helm
      ;;
    *) die "usage: $0 [all|helm]" ;;
  esac
  rm -rf "$DOWNLOADS"
  log "prerequisites installed (${1:-all})"
  if [[ "${1:-all}" == "all" ]]; then
    progress_report prerequisites_installed
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
