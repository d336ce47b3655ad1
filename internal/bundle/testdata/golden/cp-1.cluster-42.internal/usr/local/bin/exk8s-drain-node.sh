#!/usr/bin/env bash
# exk8s-drain-node.sh: takes this node out of its cluster before its VM
# goes away: a worker removed from its pool, a control-plane node a
# replacement retires (every upgrade step is one) or a shrink removes.
# k8sapi holds no credentials of the cluster, so the node does it itself,
# with its kubelet's own identity (system:node:<name>): it cordons its
# Node, evicts its pods through the eviction API (so every
# PodDisruptionBudget is respected: a refused eviction is asked again),
# waits for them for at most DRAIN_SECONDS, then deletes its Node.
# DRAIN_SECONDS is its bundle's default unless k8sapi told it another
# bound lately: the running upgrade that retires this node answers its
# health reports with the upgrade's drain_timeout_seconds, which the
# health script keeps in DRAIN_BOUND_FILE (asked at power-off instead,
# k8sapi could not answer: the VM's deletion, which powers it off, ends
# its IMDS sessions). The Node authorizer and NodeRestriction let a node
# do each of these to its own Node and its own pods only; deleting its
# Node is the one right RBAC adds (control-plane-rbac.yaml). kubectl
# drain cannot run as a node: it reads each DaemonSet and polls each
# evicted pod by name, which the Node authorizer refuses for a pod that
# is gone.
#
# Every call goes to API_SERVER, the cluster's endpoint name, never to a
# control-plane node's own API server: a retired control-plane node is out
# of etcd before its VM is deleted (its own API server no longer serves),
# and the name was moved off it. Its kubelet, which reaches only that API
# server, cannot end its evicted pods either: there (AWAIT_GONE false) the
# drain waits until every eviction is granted, not for the pods to be
# gone; the pod garbage collector deletes them with the Node. A worker's
# drain waits for its pods to be gone.
#
# exk8s-drain.service runs it (--if-powering-off) when the node powers
# off: a deleted VM's power-off, stopped before the kubelet and the
# containers. A reboot is not a removal: then it does nothing. It never
# stops the power-off: whatever fails is logged, and the bounded wait ends
# it. Its cordon is marked (DRAIN_CORDON_MARK) until its Node is deleted:
# a node whose VM powers on again after a drain cut off or failed finds
# the mark, and exk8s-drain-undo.service runs it (--undo-cordon) to
# uncordon its Node, so only a node that goes stays cordoned.
# EXK8S_ROOT prefixes every path (tests).
set -uo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-drain-node

NODE_NAME='cp-1.cluster-42.internal'
KUBELET_KUBECONFIG="${ROOT}"'/etc/exk8s/kubeconfig/kubelet.kubeconfig'
API_SERVER='https://exk8s-7-2a.k8s.excloud.co.in:6443'
# Whether the drain waits for its evicted pods to be gone (this node's
# kubelet ends them) or only for every eviction to be granted.
AWAIT_GONE=false
# The bundle's default bound of the wait for pods, and what k8sapi may
# tell instead: a bound in [MIN, MAX] written at most WORD_SECONDS ago.
DEFAULT_DRAIN_SECONDS="${EXK8S_DRAIN_SECONDS:-120}"
DRAIN_BOUND_FILE="${ROOT}"'/var/lib/exk8s/drain-seconds'
DRAIN_MIN_SECONDS=30
DRAIN_MAX_SECONDS=3600
DRAIN_WORD_SECONDS=300
DRAIN_CORDON_MARK="${ROOT}"'/var/lib/exk8s/drain-cordoned'
# Seconds between two rounds of evictions and checks.
DRAIN_INTERVAL="${EXK8S_DRAIN_INTERVAL:-5}"

# k ARGS...: kubectl as this node, at the cluster's endpoint, each call
# bounded.
k() { kubectl --kubeconfig "$KUBELET_KUBECONFIG" --server="$API_SERVER" --request-timeout=10s "$@"; }

# drain_bound: the seconds this drain waits for pods, and whose they are:
# k8sapi's word if it is fresh and in range, else the bundle's default.
drain_bound() {
  local told age
  if told="$(cat "$DRAIN_BOUND_FILE" 2>/dev/null)" && [[ "$told" =~ ^[1-9][0-9]{0,4}$ ]] &&
    ((told >= DRAIN_MIN_SECONDS && told <= DRAIN_MAX_SECONDS)); then
    age=$(($(date +%s) - $(stat -c %Y "$DRAIN_BOUND_FILE")))
    if ((age <= DRAIN_WORD_SECONDS)); then
      echo "$told k8sapi's (the upgrade retiring this node, told ${age} s ago)"
      return
    fi
  fi
  echo "$DEFAULT_DRAIN_SECONDS the bundle's default"
}

# powering_off: systemd is powering the machine off or halting it, not
# rebooting it.
powering_off() {
  local jobs
  jobs="$(systemctl list-jobs --no-legend 2>/dev/null | awk '{print $2}')"
  grep -qxE 'poweroff\.target|halt\.target' <<<"$jobs" && ! grep -qx 'reboot\.target' <<<"$jobs"
}

# remaining: this node's pods a drain waits for, one "namespace name
# deleting" line each: not a mirror pod (the kubelet's static pods), not a
# DaemonSet's (its controller ignores cordons and would start it again),
# not finished. Listed by node, the one list the Node authorizer allows.
remaining() {
  k get pods --all-namespaces --field-selector "spec.nodeName=${NODE_NAME}" -o json | jq -r '
    .items[]
    | select(.metadata.annotations["kubernetes.io/config.mirror"] == null)
    | select(any(.metadata.ownerReferences[]?; .controller == true and .kind == "DaemonSet") | not)
    | select(.status.phase != "Succeeded" and .status.phase != "Failed")
    | "\(.metadata.namespace) \(.metadata.name) \(.metadata.deletionTimestamp != null)"'
}

# evict NAMESPACE NAME: asks the eviction API to evict the pod. A refusal
# (a PodDisruptionBudget that allows no disruption now: 429) is logged and
# asked again next round.
evict() {
  local body out
  body="$(jq -cn --arg ns "$1" --arg name "$2" \
    '{apiVersion: "policy/v1", kind: "Eviction", metadata: {namespace: $ns, name: $name}}')"
  if out="$(k create --raw "/api/v1/namespaces/$1/pods/$2/eviction" -f - <<<"$body" 2>&1)"; then
    log "evicting $1/$2"
  else
    log "eviction of $1/$2 refused, asking again: ${out}"
  fi
}

# awaited: the pods the drain still waits for, as remaining lists them:
# all of them, or with AWAIT_GONE false those not evicted yet.
awaited() {
  local pods
  pods="$(remaining)" || return 1
  if [[ "$AWAIT_GONE" == true ]]; then
    printf '%s' "$pods"
  else
    grep ' false$' <<<"$pods" || true
  fi
}

# drain_pods: evicts this node's pods until none is awaited or
# DRAIN_SECONDS have passed; true when none is.
drain_pods() {
  local deadline=$((SECONDS + DRAIN_SECONDS)) pods ns name deleting
  while :; do
    pods="$(awaited)" || pods="unknown"
    if [[ -z "$pods" ]]; then
      return 0
    fi
    if ((SECONDS >= deadline)); then
      log "pods still on ${NODE_NAME} after ${DRAIN_SECONDS} s: $(tr '\n' ';' <<<"$pods")"
      return 1
    fi
    while read -r ns name deleting; do
      [[ "$deleting" == false ]] && evict "$ns" "$name"
    done <<<"${pods/#unknown/}"
    sleep "$DRAIN_INTERVAL"
  done
}

# undo_cordon: this node stayed (its VM started again) after a drain
# that left its Node cordoned: uncordon it, asking again while the API
# server does not answer yet, and drop the mark once done. No mark:
# nothing to undo (a Node the operator cordoned stays so).
undo_cordon() {
  [[ -f "$DRAIN_CORDON_MARK" ]] || exit 0
  local try
  for try in $(seq 1 "${EXK8S_UNDO_TRIES:-60}"); do
    if k uncordon "$NODE_NAME" >/dev/null; then
      rm -f "$DRAIN_CORDON_MARK"
      log "uncordoned ${NODE_NAME}: its last drain left it cordoned and it stays"
      exit 0
    fi
    sleep "$DRAIN_INTERVAL"
  done
  log "could not uncordon ${NODE_NAME} after ${try} tries; the mark stays for its next start"
  exit 0
}

if [[ "${1:-}" == --undo-cordon ]]; then
  undo_cordon
fi
if [[ "${1:-}" == --if-powering-off ]] && ! powering_off; then
  log "not powering off (a reboot): ${NODE_NAME} stays in the cluster"
  exit 0
fi

read -r DRAIN_SECONDS whose <<<"$(drain_bound)"
log "draining ${NODE_NAME} for at most ${DRAIN_SECONDS} s (${whose})"
# Marked before the cordon, and durable: a power-off cut short leaves it.
if ! { mkdir -p "$(dirname "$DRAIN_CORDON_MARK")" && : >"$DRAIN_CORDON_MARK" && sync "$DRAIN_CORDON_MARK"; }; then
  log "could not mark the cordon; a node that stays will have to be uncordoned by hand"
fi
log "cordoning ${NODE_NAME}"
k cordon "$NODE_NAME" >/dev/null || log "could not cordon ${NODE_NAME}; draining anyway"
if drain_pods; then
  if [[ "$AWAIT_GONE" == true ]]; then
    log "every pod left ${NODE_NAME}"
  else
    log "every pod of ${NODE_NAME} is evicted"
  fi
fi
# Deleted even if some pod stayed: the VM goes away whatever we do, and a
# pod of a Node that no longer exists is deleted by the pod garbage
# collector, so its controller starts it elsewhere at once.
# A deleted Node takes its cordon with it: the kubelet of a node that
# stays registers a new one, schedulable.
if k delete node "$NODE_NAME" --wait=false >/dev/null; then
  rm -f "$DRAIN_CORDON_MARK"
  log "deleted Node ${NODE_NAME}"
else
  log "could not delete Node ${NODE_NAME}"
fi
exit 0
