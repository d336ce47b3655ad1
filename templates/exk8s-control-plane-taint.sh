#!/usr/bin/env bash
# exk8s-control-plane-taint.sh: keeps this control-plane node's Node
# schedulable while the cluster has no Ready worker, and tainted
# {{ .Taint.Key }}:NoSchedule (as kubeadm and kOps taint theirs) while
# a node pool has one. A worker is a Node labelled {{ .Taint.PoolLabel }}
# (its kubelet registers it so); one that is cordoned (draining) does not
# count, so the last worker's pods may come back to the control plane
# while it drains. Each control-plane node looks after its own Node only,
# every {{ .Taint.EverySeconds }} s, as {{ .Taint.Unit }}'s identity,
# which RBAC lets read and patch Nodes and nothing else. It patches only
# when the taint must change, and logs only then (or when a call fails).
# --once: one round (tests). EXK8S_ROOT prefixes the kubeconfig's path.
set -uo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as {{ shq .Taint.Unit }}

NODE_NAME={{ shq .Node.Name }}
KUBECONFIG_FILE="${ROOT}"{{ shq .Taint.Kubeconfig }}
POOL_LABEL={{ shq .Taint.PoolLabel }}
TAINT_KEY={{ shq .Taint.Key }}
EVERY={{ .Taint.EverySeconds }}

# k ARGS...: kubectl as the taint's identity, each call bounded.
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=10s "$@"; }

# ready_workers: how many workers are Ready and schedulable.
ready_workers() {
  k get nodes -l "$POOL_LABEL" -o json | jq '[.items[]
    | select(.spec.unschedulable != true)
    | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}

# tainted: this node carries the taint ("true" or "false").
tainted() {
  k get node "$NODE_NAME" -o json | jq --arg k "$TAINT_KEY" 'any(.spec.taints[]?; .key == $k and .effect == "NoSchedule")'
}

# round: the taint as it must be now.
round() {
  local workers has
  workers="$(ready_workers)" && has="$(tainted)" || return 1
  if ((workers > 0)) && [[ "$has" == false ]]; then
    k taint nodes "$NODE_NAME" "${TAINT_KEY}:NoSchedule" --overwrite >/dev/null &&
      log "${workers} Ready worker(s): tainted ${NODE_NAME} ${TAINT_KEY}:NoSchedule"
  elif ((workers == 0)) && [[ "$has" == true ]]; then
    k taint nodes "$NODE_NAME" "${TAINT_KEY}:NoSchedule-" >/dev/null &&
      log "no Ready worker: ${NODE_NAME} takes workloads again"
  fi
}

while :; do
  round || log "could not look at the Nodes; trying again in ${EVERY} s"
  [[ "${1:-}" == --once ]] && break
  sleep "$EVERY"
done
