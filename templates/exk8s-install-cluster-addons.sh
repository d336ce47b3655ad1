#!/usr/bin/env bash
# exk8s-install-cluster-addons.sh: installs the cluster-wide addons (the
# control plane's own RBAC, kube-proxy, Cilium when it is the cluster's CNI,
# CoreDNS) once, from the initial control-plane node only, and reports
# addons_installed to k8sapi (or failed, with the step). Under the bridge
# CNI there is no network addon: every node configures its own
# (exk8s-pod-network.service), and helm is never needed.
set -euo pipefail

MANIFESTS=/etc/exk8s/manifests

# shellcheck source=/dev/null
. /usr/local/bin/exk8s-progress.sh
progress_begin exk8s-install-cluster-addons exk8s-addons

step "reading ${CLUSTER_ENV}"
load_cluster_env

if [[ "${IS_INITIAL_CONTROL_PLANE:-false}" != "true" ]]; then
  log "not the initial control-plane node; nothing to do"
  exit 0
fi
require_env CNI ETCD_INITIAL_CLUSTER
case "$CNI" in
  cilium) require_env CILIUM_CHART CILIUM_VERSION ;;
  bridge) ;;
{{- if .Flannel }}
  flannel) ;;
{{- end }}
  *) die "unknown CNI ${CNI} in cluster.env" ;;
esac

export KUBECONFIG=/etc/exk8s/kubeconfig/admin.kubeconfig

readyz() { kubectl get --raw=/readyz >/dev/null 2>&1; }

if [[ "$CNI" == cilium ]] && ! command -v helm >/dev/null 2>&1; then
  step "installing helm"
  /usr/local/bin/exk8s-install-prereqs.sh helm
fi

step "waiting for the API server to be ready"
retry 600 1 readyz || die "API server not ready after 10 minutes"
{{- if .EtcdRestore }}

# A restored cluster's keyspace holds the Nodes of the cluster its snapshot
# was taken from. Their machines belong to that cluster and never report
# here, so the rollouts below would wait on their DaemonSet pods until they
# time out. Every Node not named for this cluster goes (the controller
# manager then collects the pods bound to them); this cluster's own nodes,
# named *.<this node's domain>, stay.
NODE_DOMAIN={{ shq .Node.Name }}
NODE_DOMAIN="${NODE_DOMAIN#*.}"
old_cluster_nodes() {
  local names name
  names="$(kubectl get nodes -o jsonpath='{.items[*].metadata.name}')" || return 1
  for name in $names; do
    [[ "$name" == *".${NODE_DOMAIN}" ]] || echo "$name"
  done
}
step "removing the Nodes of the cluster the snapshot was taken from"
old_nodes="$(retry 25 2 old_cluster_nodes)" || die "cannot list the Nodes"
for name in $old_nodes; do
  retry 25 2 kubectl delete node "$name" --ignore-not-found --wait=false >&2 || die "cannot remove the old cluster's Node ${name}"
  log "removed ${name}: a Node of the cluster the snapshot was taken from"
done
{{- end }}

step "applying the control-plane RBAC"
retry 25 2 kubectl apply -f "${MANIFESTS}/control-plane-rbac.yaml" || die "cannot apply the control-plane RBAC"
{{- if .Flannel }}

# flannel first: no node is Ready, and no pod (CoreDNS's) gets an address,
# until flanneld has written the node's lease. It reaches the API server
# by the control plane's name, not through kube-proxy's rules.
step "installing flannel"
retry 25 2 kubectl apply -f "${MANIFESTS}/flannel.yaml" || die "cannot apply flannel"
{{- end }}

# CoreDNS reaches the API through the kubernetes Service, which only
# kube-proxy's rules route: a CoreDNS started first sent its first request
# nowhere and waited out its 30 s timeout before it asked again. So
# kube-proxy is rolled out on every node first (seconds: its image was
# pulled ahead while the node started), then CoreDNS. kube-proxy itself
# reaches the API by the control plane's name, as its ServiceAccount; its
# file creates that account, its binding and its kubeconfig before the
# DaemonSet (kubectl applies a file in order).
step "installing kube-proxy"
retry 25 2 kubectl apply -f "${MANIFESTS}/kube-proxy.yaml" || die "cannot apply kube-proxy"

if [[ "$CNI" == cilium ]]; then
  step "installing Cilium ${CILIUM_VERSION}"
  retry 3 15 helm upgrade --install cilium "$CILIUM_CHART" \
    --version "$CILIUM_VERSION" \
    --namespace kube-system \
    --values /etc/exk8s/config/cilium-values.yaml \
    --wait \
    --timeout 10m || die "cannot install Cilium ${CILIUM_VERSION} from ${CILIUM_CHART}"
fi

# Every control-plane node gets its role label from here: a kubelet may not
# set node-role labels on itself, and only this node holds an identity
# that may (system:masters, for the addons). A node that has not
# registered yet is labelled when it does (asked every second), within 10
# minutes; one that takes longer is logged, not fatal: the label is
# informational.
label_control_planes() {
  local member name pending=() i
  for member in ${ETCD_INITIAL_CLUSTER//,/ }; do
    pending+=("${member%%=*}")
  done
  for ((i = 1; i <= 600 && ${#pending[@]} > 0; i++)); do
    local left=()
    for name in "${pending[@]}"; do
      if kubectl label node "$name" node-role.kubernetes.io/control-plane= --overwrite >/dev/null 2>&1; then
        log "labelled ${name} node-role.kubernetes.io/control-plane"
      else
        left+=("$name")
      fi
    done
    pending=("${left[@]}")
    ((${#pending[@]} == 0)) || sleep 1
  done
  ((${#pending[@]} == 0)) || log "not registered within 10 minutes, left unlabelled: ${pending[*]}"
}
step "labelling the control-plane nodes"
label_control_planes
step "waiting for kube-proxy on every node"
kubectl -n kube-system rollout status daemonset/kube-proxy --timeout=10m
{{- if .Flannel }}
step "waiting for flannel on every node"
kubectl -n kube-system rollout status daemonset/flannel --timeout=10m
{{- end }}
step "installing CoreDNS"
retry 25 2 kubectl apply -f "${MANIFESTS}/coredns.yaml" || die "cannot apply CoreDNS"
kubectl -n kube-system rollout status deployment/coredns --timeout=10m
log "addons installed"
progress_report {{ phase "addons_installed" }}
