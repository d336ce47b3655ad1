#!/usr/bin/env bash
# exk8s-health-report.sh: tells k8sapi this node is alive and what it sees,
# run every 30 s by exk8s-health-report.timer once the node is ready
# (docs/NODE-HEALTH.md). Each check is local and bounded: the kubelet's
# /healthz. The report goes to
# k8sapi's health route for this VM with the bundle's proofs; a node that
# stops reporting is judged unhealthy by k8sapi, and one unhealthy for
# longer than its cluster's unhealthy_after is replaced. A failed report
# is only logged: the next run reports again. EXK8S_ROOT prefixes every
# path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-health-report
KUBELET_HEALTHZ='http://127.0.0.1:10248/healthz'
CHECK_SECONDS=5
DRAIN_BOUND_FILE="${ROOT}"'/var/lib/exk8s/drain-seconds'

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
checks='{}'

# check NAME CMD...: runs CMD (each bounds its own call by CHECK_SECONDS)
# and adds NAME to the report: ok, or failed with the first of what it
# said.
check() {
  local name=$1 ok=true out
  shift
  if ! out="$("$@" 2>&1)"; then
    ok=false
  fi
  checks="$(jq -c --arg name "$name" --argjson ok "$ok" --arg message "${out:0:200}" \
    '.[$name] = {ok: $ok} + (if $ok then {} else {message: $message} end)' <<<"$checks")"
}

kubelet_healthz() { curl -fsS --max-time "$CHECK_SECONDS" "$KUBELET_HEALTHZ"; }

check kubelet kubelet_healthz

if ! vm_proofs "$work"; then
  log "no proofs for k8sapi: the report is skipped"
  exit 1
fi

# send_report BODY: sends the report, its answer's headers in
# answer.headers and its HTTP status in answer.status.
send_report() {
  printf '%s' "$1" >"$work/health.json"
  k8sapi_call report 'worker_health' "$work" /dev/null -X POST -H 'Content-Type: application/json' \
    -D "$work/answer.headers" -w '%{http_code}' --data-binary "@$work/health.json" >"$work/answer.status"
}

body="$(jq -n -c --argjson checks "$checks" '{checks: $checks}')"
send_report "$body" || { log "k8sapi did not take the report: $body"; exit 1; }

# A CA rotation asks this node for a phase it has not applied: renew now,
# not at the daily timer (the renewal applies it).
if grep -qi '^X-Exk8s-Renew: *due' "$work/answer.headers"; then
  log "k8sapi asks for a renewal now (a CA rotation)"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" != "1" ]]; then
    systemctl start --no-block exk8s-renew-certificates.service || log "could not start the renewal"
  fi
fi

# The running upgrade that retires this node tells its drain bound: kept
# (with the time it was told) for the drain at power-off, which k8sapi
# could not answer then (exk8s-drain-node.sh); an answer without it
# means the bundle's default again.
told="$(grep -i '^X-Exk8s-Drain-Seconds:' "$work/answer.headers" | tail -n 1 | cut -d: -f2 | tr -dc '0-9')" || true
if [[ -n "$told" ]]; then
  mkdir -p "$(dirname "$DRAIN_BOUND_FILE")"
  printf '%s\n' "$told" >"$DRAIN_BOUND_FILE.new" && mv -f "$DRAIN_BOUND_FILE.new" "$DRAIN_BOUND_FILE"
else
  rm -f "$DRAIN_BOUND_FILE"
fi
