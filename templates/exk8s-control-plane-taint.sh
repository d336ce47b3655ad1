#!/usr/bin/env bash
# exk8s-control-plane-taint.sh: keeps this control-plane node's Node
# labelled {{ .Taint.Key }}, and schedulable while the cluster has no Ready worker, and tainted
# {{ .Taint.Key }}:NoSchedule (as kubeadm and kOps taint theirs) while
# a node pool has one. A worker is a Node labelled {{ .Taint.PoolLabel }}
# (its kubelet registers it so); one that is cordoned (draining) does not
# count, so the last worker's pods may come back to the control plane
# while it drains. Each control-plane node looks after its own Node only,
# every {{ .Taint.EverySeconds }} s, as {{ .Taint.Unit }}'s identity,
# which RBAC lets read and patch Nodes (and read /metrics, for the health
# report) and nothing else. It patches only
# when the taint must change, and logs only then, or when its calls start
# or stop failing (an API server down for an hour is two lines).
# Tests: EXK8S_TAINT_ROUNDS rounds (0: for ever), EXK8S_TAINT_EVERY
# seconds apart; EXK8S_ROOT prefixes the kubeconfig's path.
set -uo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as {{ shq .Taint.Unit }}

NODE_NAME={{ shq .Node.Name }}
KUBECONFIG_FILE="${ROOT}"{{ shq .Taint.Kubeconfig }}
POOL_LABEL={{ shq .Taint.PoolLabel }}
TAINT_KEY={{ shq .Taint.Key }}
EVERY="${EXK8S_TAINT_EVERY:-{{ .Taint.EverySeconds }}}"
ROUNDS="${EXK8S_TAINT_ROUNDS:-0}"

errors="$(mktemp)"
trap 'rm -f "$errors"' EXIT

# k ARGS...: kubectl as the taint's identity, each call bounded; its
# complaints kept for the one line that reports them.
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=10s "$@" 2>>"$errors"; }

# ready_workers: how many workers are Ready and schedulable.
ready_workers() {
  k get nodes -l "$POOL_LABEL" -o json | jq '[.items[]
    | select(.spec.unschedulable != true)
    | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}

# tainted NODE_JSON: it carries the taint ("true" or "false").
tainted() {
  jq --arg k "$TAINT_KEY" 'any(.spec.taints[]?; .key == $k and .effect == "NoSchedule")' <<<"$1"
}

# label NODE_JSON: gives this node its role label ({{ .Taint.Key }}=)
# when it lacks it. The addons label the founding nodes; a node that joins
# later (a replacement) has only this: a kubelet may not set a node-role
# label on itself, and the admission policy lets the taint's identity add
# that one label and no other.
label() {
  [[ "$(jq --arg k "$TAINT_KEY" '.metadata.labels // {} | has($k)' <<<"$1")" == false ]] || return 0
  k label node "$NODE_NAME" "${TAINT_KEY}=" >/dev/null || return 1
  log "labelled ${NODE_NAME} ${TAINT_KEY}"
}

# round: the label, and the taint as it must be now.
round() {
  local workers node has
  workers="$(ready_workers)" && node="$(k get node "$NODE_NAME" -o json)" && has="$(tainted "$node")" || return 1
  label "$node" || return 1
  if ((workers > 0)) && [[ "$has" == false ]]; then
    k taint nodes "$NODE_NAME" "${TAINT_KEY}:NoSchedule" --overwrite >/dev/null || return 1
    log "${workers} Ready worker(s): tainted ${NODE_NAME} ${TAINT_KEY}:NoSchedule"
  elif ((workers == 0)) && [[ "$has" == true ]]; then
    k taint nodes "$NODE_NAME" "${TAINT_KEY}:NoSchedule-" >/dev/null || return 1
    log "no Ready worker: ${NODE_NAME} takes workloads again"
  fi
}

failing=false
for ((i = 1; ROUNDS == 0 || i <= ROUNDS; i++)); do
  : >"$errors"
  if round; then
    [[ "$failing" == false ]] || log "the Nodes answer again"
    failing=false
  elif [[ "$failing" == false ]]; then
    log "cannot read the Nodes or set the taint, trying again every ${EVERY} s: $(tr '\n' ' ' <"$errors")"
    failing=true
  fi
  sleep "$EVERY"
done
