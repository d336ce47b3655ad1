#!/usr/bin/env bash
# exk8s-pod-network.sh: the bridge CNI's pod network between the
# control-plane nodes, with no overlay (kOps's kubenet is the model). Each
# node bridges its own pods on cni0 over a pod subnet of its own
# (/etc/cni/net.d/10-exk8s.conflist); the nodes share a subnet, so a peer's
# pod subnet is routed to that peer's private address and pods reach pods
# by their own addresses, without NAT. Traffic from this node's pods that
# leaves the cluster's pod CIDR is masqueraded to the node's address (the
# conflist itself does not masquerade).
#
# k8sapi renders the subnets from the cluster's node list: ordinal k owns
# subnet k-1 of the pod CIDR, /24 each. exk8s-pod-network.service runs this
# before the kubelet on every boot, since neither routes nor NAT rules
# survive one. Running it again changes nothing: `ip route replace`, and
# the NAT rule is added only when missing.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-pod-network

POD_CIDR='172.16.0.0/12'
NODE_POD_SUBNET='172.16.3.0/24'
# Pairs of <pod subnet> <private IPv4>, one for every other control-plane node.
PEER_ROUTES=(
  '172.16.0.0/24' '10.0.0.11' # cp-1.cluster-42.internal
  '172.16.2.0/24' '10.0.0.13' # cp-3.cluster-42.internal
)
MASQUERADE_RULE=(-s "$NODE_POD_SUBNET" ! -d "$POD_CIDR"
  -m comment --comment "exk8s: pod traffic leaving the pod CIDR" -j MASQUERADE)

route_peers() {
  local i
  for ((i = 0; i < ${#PEER_ROUTES[@]}; i += 2)); do
    ip route replace "${PEER_ROUTES[i]}" via "${PEER_ROUTES[i + 1]}"
    log "pods ${PEER_ROUTES[i]} via ${PEER_ROUTES[i + 1]}"
  done
}

masquerade_leaving_traffic() {
  if ! iptables -w -t nat -C POSTROUTING "${MASQUERADE_RULE[@]}" 2>/dev/null; then
    iptables -w -t nat -A POSTROUTING "${MASQUERADE_RULE[@]}"
  fi
  log "pods ${NODE_POD_SUBNET} masqueraded when leaving ${POD_CIDR}"
}

route_peers
masquerade_leaving_traffic
