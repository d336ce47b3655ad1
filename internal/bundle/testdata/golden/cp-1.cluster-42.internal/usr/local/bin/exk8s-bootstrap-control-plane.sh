#!/usr/bin/env bash
# exk8s-bootstrap-control-plane.sh: turns a host that holds its bundle and
# the prerequisites into a control-plane node: starts containerd, etcd and the
# kubelet (which starts the static pods), waits for the node's own API
# server, then, on the initial node only, installs the cluster addons. It
# reports each phase to k8sapi as it passes it, and failed if a step fails
# (exk8s-progress.sh).
set -euo pipefail

KUBELET_KUBECONFIG=/etc/exk8s/kubeconfig/kubelet.kubeconfig
# Host-specific kubelet settings: drop-ins over the rendered config.yaml
# (kubelet --config-dir), so no rendered file is ever edited on the host.
KUBELET_DROPIN_DIR=/etc/kubernetes/kubelet.conf.d

# shellcheck source=/dev/null
. /usr/local/bin/exk8s-progress.sh
progress_begin exk8s-bootstrap-control-plane exk8s-bootstrap

step "reading ${CLUSTER_ENV}"
load_cluster_env NODE_NAME CNI

for bin in containerd ctr etcd kubelet kubectl; do
  command -v "$bin" >/dev/null 2>&1 || die "missing required binary: ${bin} (run exk8s-install-prereqs.sh)"
done

mkdir -p /etc/kubernetes/manifests /var/lib/kubelet /var/log/exk8s "$KUBELET_DROPIN_DIR"
mkdir -p /var/lib/etcd
chmod 0700 /var/lib/etcd

# pull_ahead: every image this node runs, one at a time in the order it
# needs them (the sandbox's and the API server's first, the addons' last),
# while etcd finds its quorum: the addons' pods then start without a pull.
# A pull that fails costs nothing: the kubelet pulls the image itself.
pull_ahead() {
  local image
  for image in 'registry.k8s.io/pause:3.10.1' 'registry.k8s.io/kube-apiserver:v1.35.4' 'registry.k8s.io/kube-controller-manager:v1.35.4' 'registry.k8s.io/kube-scheduler:v1.35.4' 'registry.k8s.io/kube-proxy:v1.35.4' 'registry.k8s.io/coredns/coredns:v1.13.1'; do
    if ctr --namespace k8s.io images pull --hosts-dir /etc/containerd/certs.d "$image" >/dev/null 2>&1; then
      log "pulled ${image} ahead"
    else
      log "could not pull ${image} ahead; the kubelet will pull it"
    fi
  done
}

step "configuring the kubelet's resolv.conf"
configure_kubelet_resolv_conf "$KUBELET_DROPIN_DIR"

step "starting containerd"
systemctl daemon-reload
start_unit containerd
systemctl enable etcd kubelet
pull_ahead &

step "starting etcd"
# etcd reports ready only once its peers form a quorum, so do not block on it:
# every control-plane node starts its member at about the same time.
systemctl restart --no-block etcd
# From now on every minute: a retired node's etcd certificates are
# refused within two (docs/REPLACE-NODE.md).
start_unit exk8s-etcd-crl.timer
progress_report etcd_started

# The IMDS guard and the pod network, before the kubelet starts any pod.
start_pod_network "$CNI"

# The controller-manager and the scheduler start once their API server
# answers. Started with it, they exited while it could not answer them yet,
# the kubelet's crash-loop back-off then held them (10, 20, 40 s), and they
# took CPU from the API server while it started. The kubelet skips a
# manifest whose name starts with a dot, so holding one back is a rename.
MANIFESTS_DIR=/etc/kubernetes/manifests
HELD_MANIFESTS=(kube-controller-manager.yaml kube-scheduler.yaml)
# rename_manifests FROM_PREFIX TO_PREFIX: each held manifest renamed.
rename_manifests() {
  local m
  for m in "${HELD_MANIFESTS[@]}"; do
    if [[ -f "${MANIFESTS_DIR}/${1}${m}" ]]; then
      mv -f "${MANIFESTS_DIR}/${1}${m}" "${MANIFESTS_DIR}/${2}${m}"
    fi
  done
}

step "starting the kubelet"
rename_manifests "" .
systemctl restart kubelet
log "started etcd and kubelet on ${NODE_NAME}"
progress_report kubelet_started

# The node's own API server, over loopback (its serving cert names
# 127.0.0.1); /readyz is open to any authenticated identity, the kubelet's
# included. It is ready once etcd has a quorum, so peers must be up too.
local_readyz() { kubectl --kubeconfig "$KUBELET_KUBECONFIG" --server https://127.0.0.1:6443 get --raw=/readyz >/dev/null 2>&1; }
step "waiting for the local API server"
retry 600 1 local_readyz || die "the local API server is not ready after 10 minutes"
step "starting the controller-manager and the scheduler"
rename_manifests . ""
progress_report apiserver_ready

if [[ "${IS_INITIAL_CONTROL_PLANE:-false}" == "true" ]]; then
  step "installing the cluster addons"
  /usr/local/bin/exk8s-install-cluster-addons.sh
fi
step "starting certificate renewal"
# Daily from now on; k8sapi renews only a ready node.
start_unit exk8s-renew-certificates.timer
step "starting etcd snapshots"
# Every few minutes: k8sapi hands a snapshot to one Ready node of the cluster.
start_unit exk8s-etcd-snapshot.timer
step "starting etcd membership changes"
# Every minute: while a scaling shrinks the control plane, k8sapi asks one
# ready member that stays to remove each leaving member from etcd.
start_unit exk8s-etcd-membership.timer
step "starting the addons upgrades"
# Every minute: while an upgrade moves the addons, k8sapi asks one ready
# node at the new release to apply them.
start_unit 'exk8s-upgrade-addons.timer'
step "starting the control-plane taint"
# From now on: this node is tainted NoSchedule while a pool has a Ready worker.
start_unit 'exk8s-control-plane-taint'.service
step "arming the drain at power-off"
# Started now, stopped at power-off: a node k8sapi retires (a
# replacement's old node, a shrink's leaving member) drains itself and
# deletes its Node before its VM goes (exk8s-drain-node.sh). The undo
# runs at every start: a node that stays uncordons what a cut-off drain
# left cordoned (nothing now: no drain ran yet).
start_unit exk8s-drain.service exk8s-drain-undo.service
step "starting the health reports"
# Every 30 s from now on: a node that stops reporting, or reports a failing
# check, is replaced once its cluster's unhealthy_after passes.
start_unit exk8s-health-report.timer
log "bootstrap of ${NODE_NAME} finished"
progress_report ready
