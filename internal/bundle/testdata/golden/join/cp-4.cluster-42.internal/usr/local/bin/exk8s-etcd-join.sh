#!/usr/bin/env bash
# exk8s-etcd-join.sh: joins this node's etcd member to the cluster's
# running etcd, on a node made by a replacement (docs/REPLACE-NODE.md).
#   add      before etcd first starts: removes the member of each node being
#            replaced (by name or peer URL) if it is still listed, then adds
#            this node as a learner unless it is a member already.
#   promote  once etcd runs: promotes this member once it has caught up with
#            the leader (etcd refuses until then), retried for 10 minutes.
# Both are idempotent: a rerun (a re-opened bootstrap) does what is left.
# It talks to the members that stay as the node's etcd client.
# EXK8S_ROOT prefixes every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-etcd-join
ENDPOINTS='https://10.0.0.12:2379,https://10.0.0.13:2379'
SELF_NAME='cp-4.cluster-42.internal'
SELF_PEER_URL='https://10.0.0.14:2380'
# name=peer URL of each member this node replaces.
REMOVED=('cp-1.cluster-42.internal=https://10.0.0.11:2380' )
ETCD_CACERT="${ROOT}"'/etc/exk8s/pki/etcd-ca.pem'
ETCD_CERT="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client.pem'
ETCD_KEY="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client-key.pem'

ctl() {
  ETCDCTL_API=3 etcdctl --endpoints="$ENDPOINTS" --cacert="$ETCD_CACERT" --cert="$ETCD_CERT" --key="$ETCD_KEY" \
    --command-timeout=10s "$@"
}

# members: one line per member, "id,status,name,peer URL,client URL,is learner"
# (every member here has one peer and one client URL).
members() { ctl member list -w simple | tr -d ' '; }

# member NAME PEER_URL: the line of the member with that name or peer URL
# (a learner that never started has no name yet).
member() { members | awk -F, -v name="$1" -v peer="$2" '($3 != "" && $3 == name) || $4 == peer { print; exit }'; }

join_add() {
  local r line
  for r in "${REMOVED[@]}"; do
    line="$(member "${r%%=*}" "${r#*=}")"
    if [[ -n "$line" ]]; then
      log "removing the replaced member ${r%%=*} (${line%%,*})"
      ctl member remove "${line%%,*}" >&2
    fi
  done
  if [[ -n "$(member "$SELF_NAME" "$SELF_PEER_URL")" ]]; then
    log "${SELF_NAME} is a member already"
    return 0
  fi
  log "adding ${SELF_NAME} as a learner"
  ctl member add "$SELF_NAME" --peer-urls="$SELF_PEER_URL" --learner >&2
}

join_promote() {
  local i line
  for ((i = 0; i < 120; i++)); do
    line="$(member "$SELF_NAME" "$SELF_PEER_URL")"
    [[ -n "$line" ]] || die "${SELF_NAME} is not an etcd member; run ${0} add first"
    if [[ "${line##*,}" == false ]]; then
      log "${SELF_NAME} is a voting member"
      return 0
    fi
    if ctl member promote "${line%%,*}" >&2; then
      log "promoted ${SELF_NAME}"
      return 0
    fi
    sleep 5
  done
  die "${SELF_NAME} was not promoted within 10 minutes: the learner has not caught up"
}

case "${1:-}" in
add) join_add ;;
promote) join_promote ;;
*) die "usage: ${0} add|promote" ;;
esac
