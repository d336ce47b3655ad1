#!/usr/bin/env bash
# exk8s-health-report.sh: tells k8sapi this node is alive and what it sees,
# run every 30 s by exk8s-health-report.timer once the node is ready
# (docs/NODE-HEALTH.md). Each check is local and bounded: the kubelet's
# /healthz{{ if .ControlPlane }}, this node's etcd member's /health (as the API server's etcd
# client) and its API server's /readyz (as the kubelet){{ end }}. The report goes to
# k8sapi's health route for this VM with the bundle's proofs; a node that
# stops reporting is judged unhealthy by k8sapi, and one unhealthy for
# longer than its cluster's unhealthy_after is replaced. A failed report
# is only logged: the next run reports again. EXK8S_ROOT prefixes every
# path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-health-report
KUBELET_HEALTHZ={{ shq .Health.KubeletHealthz }}
{{- if .ControlPlane }}
ETCD_HEALTH={{ shq .Health.EtcdHealth }}
ETCD_CACERT="${ROOT}"{{ shq .Health.EtcdCACert }}
ETCD_CERT="${ROOT}"{{ shq .Health.EtcdCert }}
ETCD_KEY="${ROOT}"{{ shq .Health.EtcdKey }}
READYZ_KUBECONFIG="${ROOT}"{{ shq .Health.Kubeconfig }}
READYZ_SERVER={{ shq .Health.APIServer }}
{{- end }}
CHECK_SECONDS={{ .Health.CheckSeconds }}
{{- if .Worker }}
DRAIN_BOUND_FILE="${ROOT}"{{ shq .Health.DrainBoundFile }}
{{- end }}

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
{{- if .ControlPlane }}

# etcd_health: the member answers healthy ({"health":"true"}).
etcd_health() {
  local answer
  answer="$(curl -fsS --max-time "$CHECK_SECONDS" --cacert "$ETCD_CACERT" --cert "$ETCD_CERT" --key "$ETCD_KEY" "$ETCD_HEALTH")" || return 1
  jq -e '.health == "true"' >/dev/null <<<"$answer" || { printf '%s' "$answer"; return 1; }
}

apiserver_readyz() {
  kubectl --kubeconfig "$READYZ_KUBECONFIG" --server "$READYZ_SERVER" --request-timeout="${CHECK_SECONDS}s" get --raw=/readyz
}
{{- end }}

check kubelet kubelet_healthz
{{- if .ControlPlane }}
check etcd etcd_health
check apiserver apiserver_readyz
{{- end }}

if ! vm_proofs "$work"; then
  log "no proofs for k8sapi: the report is skipped"
  exit 1
fi
jq -n --argjson checks "$checks" '{checks: $checks}' >"$work/health.json"
k8sapi_call report {{ shq .Health.Route }} "$work" /dev/null -X POST -H 'Content-Type: application/json' \
  -D "$work/answer.headers" --data-binary "@$work/health.json" ||
  { log "k8sapi did not take the report: $(cat "$work/health.json")"; exit 1; }

# A CA rotation asks this node for a phase it has not applied: renew now,
# not at the daily timer (the renewal applies it).
if grep -qi {{ shq (printf "^%s: *%s" .Health.RenewHeader .Health.RenewDue) }} "$work/answer.headers"; then
  log "k8sapi asks for a renewal now (a CA rotation)"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" != "1" ]]; then
    systemctl start --no-block exk8s-renew-certificates.service || log "could not start the renewal"
  fi
fi
{{- if .Worker }}

# The running upgrade that retires this worker tells its drain bound: kept
# (with the time it was told) for the drain at power-off, which k8sapi
# could not answer then (exk8s-drain-worker.sh); an answer without it
# means the bundle's default again.
told="$(grep -i {{ shq (printf "^%s:" .Health.DrainHeader) }} "$work/answer.headers" | tail -n 1 | cut -d: -f2 | tr -dc '0-9')" || true
if [[ -n "$told" ]]; then
  mkdir -p "$(dirname "$DRAIN_BOUND_FILE")"
  printf '%s\n' "$told" >"$DRAIN_BOUND_FILE.new" && mv -f "$DRAIN_BOUND_FILE.new" "$DRAIN_BOUND_FILE"
else
  rm -f "$DRAIN_BOUND_FILE"
fi
{{- end }}
