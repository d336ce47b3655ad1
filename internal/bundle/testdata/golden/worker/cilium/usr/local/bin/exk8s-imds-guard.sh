#!/usr/bin/env bash
# exk8s-imds-guard.sh: keeps pods away from IMDS. IMDS hands this VM's
# credentials to whoever asks from the VM's address, and a pod's traffic
# leaves the node masqueraded to that address (Cilium masquerades it; under
# the bridge CNI exk8s-pod-network.sh masquerades whatever leaves the pod
# CIDR), so a pod that reached IMDS would be the VM. This drops every packet
# from the pod CIDR to the IMDS addresses before anything else sees it.
# Under the bridge CNI each node's pods take their addresses from the node's
# /24 of the pod CIDR, so the match covers the pods on cni0 as it covers
# Cilium's.
#
# Why nftables, in a table of its own, at the prerouting hook with priority
# raw: a pod's packets enter the node's network stack through its veth (the
# bridge CNI's cni0, Cilium's lxc devices) and meet prerouting first,
# whether they are then forwarded or delivered locally; the node's own
# traffic never passes prerouting (it leaves through output), so the node
# still reaches IMDS. nftables evaluates every base chain registered at a
# hook, and a drop in any of them is final: no accept that kube-proxy's or
# Cilium's iptables rules (in their own tables) may add can let a packet
# past this one. Under Cilium this holds because pod egress goes through
# the host stack (cilium-values.yaml keeps bpf.hostLegacyRouting on, so
# BPF host routing never hands a pod's packet to the wire past netfilter).
#
# A Service can translate a pod's packet to IMDS after prerouting's raw
# priority: its ClusterIP is the destination there, IMDS only once
# kube-proxy's DNAT ran (a Service without a selector whose endpoints name
# the IMDS address). So the same match drops again at the forward hook
# (translated packets leaving the node) and the input hook (translated
# packets delivered to the node itself), where the destination is the
# translated one and the source is still the pod's (masquerading comes
# later, at postrouting).
#
# Run by exk8s-imds-guard.service, which the kubelet requires: no pod
# starts on a boot where the rule could not be installed.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-imds-guard
load_cluster_env POD_CIDR
# IMDS_BASE_URL: the environment's, the shim's (progress.env) or the default.
vm_settings

# imds_addresses: the IPv4 addresses of the IMDS host, comma-separated.
imds_addresses() {
  local host="$IMDS_BASE_URL"
  host="${host#*://}"
  host="${host%%[:/]*}"
  if [[ "$host" =~ ^[0-9.]+$ ]]; then
    printf '%s' "$host"
    return
  fi
  getent ahostsv4 "$host" | awk '{ print $1 }' | sort -u | paste -sd, -
}

addresses="$(imds_addresses)"
[[ -n "$addresses" ]] || die "cannot resolve the IMDS host; refusing to let the kubelet start without the guard"
# One transaction: the table is replaced whole, never half-written.
nft -f - <<RULES
table inet exk8s_imds_guard
delete table inet exk8s_imds_guard
table inet exk8s_imds_guard {
  chain pods_to_imds {
    type filter hook prerouting priority raw; policy accept;
    ip saddr ${POD_CIDR} ip daddr { ${addresses} } counter drop
  }
  chain pods_to_imds_translated {
    type filter hook forward priority filter; policy accept;
    ip saddr ${POD_CIDR} ip daddr { ${addresses} } counter drop
  }
  chain pods_to_imds_translated_local {
    type filter hook input priority filter; policy accept;
    ip saddr ${POD_CIDR} ip daddr { ${addresses} } counter drop
  }
}
RULES
log "pods (${POD_CIDR}) may not reach IMDS (${addresses})"
