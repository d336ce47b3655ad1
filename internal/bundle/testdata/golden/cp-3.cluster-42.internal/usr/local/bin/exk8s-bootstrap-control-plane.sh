#!/usr/bin/env bash
# exk8s-bootstrap-control-plane.sh: turns a host that holds its bundle and
# the prerequisites into a control-plane node: starts containerd, etcd and the
# kubelet (which starts the static pods), then, on the initial node only,
# installs the cluster addons.
set -euo pipefail

CLUSTER_ENV=/etc/exk8s/config/cluster.env

log() { printf '%s exk8s-bootstrap: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

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

systemctl daemon-reload
systemctl enable --now containerd
systemctl enable etcd kubelet
# etcd reports ready only once its peers form a quorum, so do not block on it:
# every control-plane node starts its member at about the same time.
systemctl restart --no-block etcd
systemctl restart kubelet
log "started etcd and kubelet on ${NODE_NAME}"

if [[ "${IS_INITIAL_CONTROL_PLANE:-false}" == "true" ]]; then
  /usr/local/bin/exk8s-install-cluster-addons.sh
fi
