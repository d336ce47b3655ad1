#!/usr/bin/env bash
# exk8s-upgrade-addons.sh: applies the cluster addons (the CNI's DaemonSet,
# kube-proxy, CoreDNS) at an upgrade's release when k8sapi asks this node
# to, run every minute by exk8s-upgrade-addons.timer once the node is
# ready (docs/UPGRADES.md, "The order"). It asks k8sapi
# (GET /bootstrap/control-plane/{vm_id}/addons, the bundle's proofs); only
# the node the upgrade chose (a ready control-plane node at the pass's
# version) is answered, while the step is due; every other node gets
# nothing and exits. The answer is the manifests rendered at the pass's
# release, in order: each is applied as the initial node's addons script
# applies it (kubectl apply, so an apply done twice changes nothing), then
# each rollout is waited for (bounded), then the result is reported (POST,
# same route): applied, or the step that failed. A run cut off before it
# reported is run again by the next ask. It reaches the node's own API
# server with its addons identity, which RBAC lets change the addons only.
# EXK8S_ROOT prefixes every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as {{ .Addons.Unit }}
export KUBECONFIG="${ROOT}"{{ shq .Addons.Kubeconfig }}
ROLLOUT_TIMEOUT={{ .Addons.RolloutSeconds }}s

cleanup_at_exit
work="$(mktemp -d)"
remove_at_exit "$work"
ask_k8sapi addons "$work" || exit 0
version="$(jq -r '.kubernetes_version' "$work/answer.json")"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "k8sapi answered no usable version"

# report FAILURE: the run's result ("" once applied) to k8sapi.
report() {
  jq -n --arg v "$version" --arg f "$1" '{kubernetes_version: $v, failure: $f}' >"$work/report.json"
  k8sapi_call addons addons "$work" "$work/reported.json" \
    -X POST -H 'Content-Type: application/json' --data-binary "@$work/report.json"
}

# fail WHAT OUTPUT: reports that WHAT failed with the last of OUTPUT, and
# ends the run.
fail() {
  local reason
  reason="$(printf '%s: %s' "$1" "$2" | tr -d '\000-\037\177' | tail -c 400)"
  report "$reason" || log "could not report the failure"
  die "$1"
}

mapfile -t names < <(jq -r '.manifests[].name' "$work/answer.json")
mapfile -t rollouts < <(jq -r '.manifests[].rollout' "$work/answer.json")
log "applying the addons at ${version}: ${names[*]}"
for i in "${!names[@]}"; do
  name="${names[$i]}"
  [[ "$name" =~ ^[a-z0-9][a-z0-9.-]*\.yaml$ ]] || die "k8sapi answered no usable manifest name"
  jq -j --argjson i "$i" '.manifests[$i].content' "$work/answer.json" >"$work/$name"
  out="$(kubectl apply -f "$work/$name" 2>&1)" || fail "applying ${name}" "$out"
  log "applied ${name}"
done
for rollout in "${rollouts[@]}"; do
  [[ "$rollout" =~ ^(daemonset|deployment)/[a-z0-9-]+$ ]] || die "k8sapi answered no usable rollout"
  out="$(kubectl -n kube-system rollout status "$rollout" --timeout="$ROLLOUT_TIMEOUT" 2>&1)" ||
    fail "waiting for ${rollout} (at most ${ROLLOUT_TIMEOUT})" "$out"
  log "${rollout} rolled out"
done
report "" || die "k8sapi did not take the addons at ${version}; the next run applies them again"
log "reported the addons at ${version} applied"
