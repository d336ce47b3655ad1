#!/usr/bin/env bash
# exk8s-flannel-cni.sh: the node's CNI configuration under the flannel CNI,
# from flanneld's lease. flanneld (the flannel DaemonSet) writes the subnet
# the controller manager allocated this node's Node to /run/flannel/subnet.env;
# this writes /etc/cni/net.d/10-exk8s.conflist from it, as flannel's own CNI
# plugin would configure the bridge plugin at each pod's ADD: pods on cni0
# over the node's subnet, the node their gateway, the lease's MTU, and no
# masquerade by the plugin while flanneld masquerades (--ip-masq:
# FLANNEL_IPMASQ=true). Routes to the other nodes' subnets are flanneld's
# (host-gw).
#
# exk8s-flannel-cni.service runs one pass on every boot before the kubelet,
# then follows the lease (--follow) for as long as the node runs. No lease: the conflist is
# removed (pods wait for one, as with flannel's plugin). A lease: the
# conflist is written whole and renamed into place, so the runtime never
# reads half of one; one already as the lease says is left alone. A lease
# it cannot read fails the run and leaves the conflist as it was.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-flannel-cni

SUBNET_ENV="${ROOT}"'/run/flannel/subnet.env'
CONFLIST="${ROOT}"'/etc/cni/net.d/10-exk8s.conflist'
IPV4_CIDR='^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$'

# read_lease: FLANNEL_NETWORK, FLANNEL_SUBNET, FLANNEL_MTU and
# FLANNEL_IPMASQ from the lease, read as data (never sourced), each
# checked.
read_lease() {
  local key value
  FLANNEL_NETWORK="" FLANNEL_SUBNET="" FLANNEL_MTU="" FLANNEL_IPMASQ=""
  while IFS='=' read -r key value; do
    case "$key" in
      FLANNEL_NETWORK | FLANNEL_SUBNET | FLANNEL_MTU | FLANNEL_IPMASQ) printf -v "$key" '%s' "$value" ;;
    esac
  done <"$SUBNET_ENV"
  [[ "$FLANNEL_NETWORK" =~ $IPV4_CIDR && "$FLANNEL_SUBNET" =~ $IPV4_CIDR ]] ||
    die "${SUBNET_ENV}: FLANNEL_NETWORK and FLANNEL_SUBNET must be IPv4 CIDRs, got '${FLANNEL_NETWORK}' and '${FLANNEL_SUBNET}'"
  [[ "$FLANNEL_MTU" =~ ^[0-9]+$ && "$FLANNEL_IPMASQ" =~ ^(true|false)$ ]] ||
    die "${SUBNET_ENV}: FLANNEL_MTU must be a number and FLANNEL_IPMASQ true or false, got '${FLANNEL_MTU}' and '${FLANNEL_IPMASQ}'"
}

# network_of A.B.C.D/N: the subnet's network address with its prefix
# (flanneld writes its gateway's address, 10.1.2.1/24; host-local refuses
# a subnet with host bits set).
network_of() {
  local a b c d prefix="${1#*/}" n mask
  IFS=. read -r a b c d <<<"${1%/*}"
  n=$(((a << 24) | (b << 16) | (c << 8) | d))
  mask=$(((0xffffffff << (32 - prefix)) & 0xffffffff))
  n=$((n & mask))
  printf '%d.%d.%d.%d/%d\n' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)) "$prefix"
}

# conflist: the node's CNI configuration for the lease read.
conflist() {
  local masq=true
  [[ "$FLANNEL_IPMASQ" == true ]] && masq=false
  jq -n --arg subnet "$(network_of "$FLANNEL_SUBNET")" --arg network "$FLANNEL_NETWORK" \
    --argjson mtu "$FLANNEL_MTU" --argjson masq "$masq" '{
    cniVersion: "1.0.0",
    name: "exk8s",
    plugins: [
      {type: "bridge", bridge: "cni0", isGateway: true, isDefaultGateway: true, ipMasq: $masq,
       hairpinMode: true, mtu: $mtu,
       ipam: {type: "host-local", ranges: [[{subnet: $subnet}]], routes: [{dst: $network}]}},
      {type: "portmap", capabilities: {portMappings: true}},
      {type: "firewall"}
    ]}'
}

# sync_conflist: one pass, the conflist as the lease says.
sync_conflist() {
  local want
  if [[ ! -e "$SUBNET_ENV" ]]; then
    rm -f "$CONFLIST"
    log "no lease in ${SUBNET_ENV} yet: no conflist until flanneld writes one"
    return 0
  fi
  read_lease
  want="$(conflist)"
  if [[ -f "$CONFLIST" && "$(cat "$CONFLIST")" == "$want" ]]; then
    log "the conflist already holds the lease (pods on ${FLANNEL_SUBNET})"
    return 0
  fi
  write_file "$CONFLIST" 0644 printf '%s\n' "$want" || die "cannot write ${CONFLIST}"
  log "wrote ${CONFLIST}: pods on ${FLANNEL_SUBNET} of ${FLANNEL_NETWORK}, MTU ${FLANNEL_MTU}"
}

# lease_seen: what identifies the lease as it is now ("absent", or its
# content, never empty), so the follower acts only on a change.
lease_seen() { { echo lease && cat "$SUBNET_ENV"; } 2>/dev/null || echo absent; }

# follow: a pass now and whenever the lease appears or changes, checked
# every EXK8S_FLANNEL_CNI_EVERY seconds. The lease is read before each
# pass, so one written while a pass runs is seen at the next check; a
# pass that fails (a lease read half-written) is tried again at the next
# check, the follower never stops on a bad lease. A poll, not a path
# unit: a path unit's watch missed the lease a replacement node's flanneld
# wrote (its pod network never came up in the node proof), and a missed
# lease is a node that never runs a pod.
follow() {
  local seen="" now
  while :; do
    now="$(lease_seen)"
    if [[ "$now" != "$seen" ]]; then
      if (sync_conflist); then
        seen="$now"
      else
        log "the lease could not be used; trying again"
      fi
    fi
    sleep "${EXK8S_FLANNEL_CNI_EVERY:-2}"
  done
}

if [[ "${1:-}" == --follow ]]; then
  follow
fi
sync_conflist
