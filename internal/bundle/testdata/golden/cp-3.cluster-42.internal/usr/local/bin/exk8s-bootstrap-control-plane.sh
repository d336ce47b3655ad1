#!/usr/bin/env bash
# exk8s-bootstrap-control-plane.sh: turns a host that holds its bundle and
# the prerequisites into a control-plane node: starts containerd, etcd and the
# kubelet (which starts the static pods), waits for the node's own API
# server, then, on the initial node only, installs the cluster addons. It
# reports each phase to k8sapi as it passes it, and failed if a step fails
# (exk8s-progress.sh).
set -euo pipefail

CLUSTER_ENV=/etc/exk8s/config/cluster.env
KUBELET_KUBECONFIG=/etc/exk8s/kubeconfig/kubelet.kubeconfig

# shellcheck source=/dev/null
. /usr/local/bin/exk8s-progress.sh
progress_begin exk8s-bootstrap-control-plane

log() { printf '%s exk8s-bootstrap: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

step "reading ${CLUSTER_ENV}"
[[ -f "$CLUSTER_ENV" ]] || die "missing ${CLUSTER_ENV}"
set -a
# shellcheck source=/dev/null
. "$CLUSTER_ENV"
set +a
: "${NODE_NAME:?NODE_NAME missing from cluster.env}"

for bin in containerd etcd kubelet kubectl; do
  command -v "$bin" >/dev/null 2>&1 || die "missing required binary: ${bin} (run exk8s-install-control-plane-prereqs.sh)"
done

mkdir -p /etc/kubernetes/manifests /var/lib/kubelet /var/log/exk8s
mkdir -p /var/lib/etcd
chmod 0700 /var/lib/etcd

step "starting containerd"
systemctl daemon-reload
systemctl enable --now containerd
systemctl enable etcd kubelet

step "starting etcd"
# etcd reports ready only once its peers form a quorum, so do not block on it:
# every control-plane node starts its member at about the same time.
systemctl restart --no-block etcd
progress_report etcd_started

step "starting the kubelet"
systemctl restart kubelet
log "started etcd and kubelet on ${NODE_NAME}"
progress_report kubelet_started

# The node's own API server, over loopback (its serving cert names
# 127.0.0.1); /readyz is open to any authenticated identity, the kubelet's
# included. It is ready once etcd has a quorum, so peers must be up too.
local_readyz() { kubectl --kubeconfig "$KUBELET_KUBECONFIG" --server https://127.0.0.1:6443 get --raw=/readyz >/dev/null 2>&1; }
step "waiting for the local API server"
retry 120 5 local_readyz || die "the local API server is not ready after 10 minutes"
progress_report apiserver_ready

if [[ "${IS_INITIAL_CONTROL_PLANE:-false}" == "true" ]]; then
  step "installing the cluster addons"
  /usr/local/bin/exk8s-install-cluster-addons.sh
fi
step "starting certificate renewal"
# Daily from now on; k8sapi renews only a ready node.
systemctl enable --now exk8s-renew-certificates.timer
log "bootstrap of ${NODE_NAME} finished"
progress_report ready
