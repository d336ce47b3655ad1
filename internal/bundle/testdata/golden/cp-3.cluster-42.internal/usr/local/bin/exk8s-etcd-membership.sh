#!/usr/bin/env bash
# exk8s-etcd-membership.sh: removes the members k8sapi asks this node to
# remove from etcd while a scaling shrinks the control plane, run every
# minute by exk8s-etcd-membership.timer once the node is ready
# (docs/SCALE-CONTROL-PLANE.md, "Shrinking"). It asks k8sapi
# (GET /bootstrap/control-plane/{vm_id}/etcd-membership, the bundle's
# proofs); only the member that stays and removes (the lowest-ordinal
# ready one) is answered, every other node gets nothing and exits. For
# each member named: if etcd's leader is that member, the leadership is
# moved to this member first (etcdctl move-leader, which finds the leader
# among every member's endpoint); then etcdctl member remove; then the
# removal is reported (POST, same route), and only then does k8sapi delete
# the leaving VM. A member no longer in etcd (removed by an earlier run
# whose report failed) is reported again. The leaving node itself never
# runs this for itself: a dead one could not, and k8sapi does not take a
# node's word for its own removal. EXK8S_ROOT prefixes every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-etcd-membership
ETCD_ENDPOINT='https://127.0.0.1:2379'
ETCD_CACERT="${ROOT}"'/etc/exk8s/pki/etcd-ca.pem'
ETCD_CERT="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client.pem'
ETCD_KEY="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client-key.pem'

# etcd ENDPOINTS ARGS...: etcdctl as the node's etcd client.
etcd() {
  local endpoints=$1
  shift
  ETCDCTL_API=3 etcdctl --endpoints="$endpoints" --cacert="$ETCD_CACERT" --cert="$ETCD_CERT" --key="$ETCD_KEY" \
    --command-timeout=15s "$@"
}

# field NAME: the value of NAME in etcdctl's -w fields output on stdin.
field() { awk -F' : ' -v name="\"$1\"" '$1 == name { print $2; exit }'; }

# hex DECIMAL: a member ID as etcdctl's member commands name it.
hex() { printf '%x\n' "$1"; }

# remove_member NAME: NAME's member out of etcd, its leadership moved to
# this member first.
remove_member() {
  local name=$1 members status id self leader clients
  members="$(etcd "$ETCD_ENDPOINT" member list)" || die "etcd did not list its members"
  id="$(awk -F', ' -v name="$name" '$3 == name { print $1 }' <<<"$members")"
  if [[ -z "$id" ]]; then
    log "${name} is not an etcd member (removed already)"
    return 0
  fi
  status="$(etcd "$ETCD_ENDPOINT" endpoint status -w fields)" || die "the local etcd member did not answer its status"
  self="$(hex "$(field MemberID <<<"$status")")"
  leader="$(hex "$(field Leader <<<"$status")")"
  if [[ "$leader" == "$id" ]]; then
    clients="$(awk -F', ' '{ print $5 }' <<<"$members" | paste -sd, -)"
    log "${name} leads etcd: moving the leadership to this member (${self}) first"
    etcd "$clients" move-leader "$self" >&2 || die "etcd did not move its leadership off ${name}"
  fi
  etcd "$ETCD_ENDPOINT" member remove "$id" >&2 || die "etcd did not remove ${name} (${id})"
  log "removed ${name} (${id}) from etcd"
}

cleanup_at_exit
work="$(mktemp -d)"
remove_at_exit "$work"
ask_k8sapi etcd_membership "$work" || exit 0
mapfile -t names < <(jq -r '.remove[].name' "$work/answer.json")
for name in "${names[@]}"; do
  [[ "$name" =~ ^[a-z0-9][a-z0-9.-]*$ ]] || die "k8sapi answered no usable member name"
  remove_member "$name"
  jq -n --arg name "$name" '{name: $name}' >"$work/report.json"
  k8sapi_call etcd_membership etcd_membership "$work" "$work/reported.json" \
    -X POST -H 'Content-Type: application/json' --data-binary "@$work/report.json" || die "k8sapi did not take the removal of ${name}"
  log "reported the removal of ${name}"
done
