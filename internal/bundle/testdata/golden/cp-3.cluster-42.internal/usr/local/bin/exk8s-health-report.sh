#!/usr/bin/env bash
# exk8s-health-report.sh: tells k8sapi this node is alive and what it sees,
# run every 30 s by exk8s-health-report.timer once the node is ready
# (docs/NODE-HEALTH.md). Each check is local and bounded: the kubelet's
# /healthz, this node's etcd member's /health (as the API server's etcd
# client) and its API server's /readyz (as the kubelet), and the deprecated
# APIs requested of that API server (its /metrics, as this node's
# control-plane identity), which k8sapi's upgrade gate judges; when they
# cannot be read the report goes without them, and k8sapi keeps what it
# had. The report goes to
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
ETCD_HEALTH='https://127.0.0.1:2379/health'
ETCD_CACERT="${ROOT}"'/etc/exk8s/pki/etcd-ca.pem'
ETCD_CERT="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client.pem'
ETCD_KEY="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client-key.pem'
READYZ_KUBECONFIG="${ROOT}"'/etc/exk8s/kubeconfig/kubelet.kubeconfig'
READYZ_SERVER='https://127.0.0.1:6443'
METRICS_KUBECONFIG="${ROOT}"'/etc/exk8s/kubeconfig/control-plane-taint.kubeconfig'
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

# etcd_health: the member answers healthy ({"health":"true"}).
etcd_health() {
  local answer
  answer="$(curl -fsS --max-time "$CHECK_SECONDS" --cacert "$ETCD_CACERT" --cert "$ETCD_CERT" --key "$ETCD_KEY" "$ETCD_HEALTH")" || return 1
  jq -e '.health == "true"' >/dev/null <<<"$answer" || { printf '%s' "$answer"; return 1; }
}

apiserver_readyz() {
  kubectl --kubeconfig "$READYZ_KUBECONFIG" --server "$READYZ_SERVER" --request-timeout="${CHECK_SECONDS}s" get --raw=/readyz
}

# deprecated_apis: the APIs the API server's apiserver_requested_deprecated_apis
# says were requested of it since it started (each series at 1), as the
# report's JSON list, sorted, at most 64; an API whose names k8sapi
# would refuse is left out, so the report is never refused for one. Fails
# when /metrics cannot be read.
deprecated_apis() {
  kubectl --kubeconfig "$METRICS_KUBECONFIG" --server "$READYZ_SERVER" --request-timeout="${CHECK_SECONDS}s" get --raw=/metrics |
    parse_deprecated_apis
}

# parse_deprecated_apis: the metrics text on stdin (the Prometheus text
# format: name{label="value",...} value) to the report's list.
parse_deprecated_apis() {
  jq -R -n -c --arg metric 'apiserver_requested_deprecated_apis' --argjson max 64 \
    --argjson group_len 253 --argjson name_len 63 \
    --arg names '^[a-zA-Z0-9.-]*$' --arg release '^([0-9]{1,3}\.[0-9]{1,3})?$' '
    def name($len; $required): length <= $len and test($names) and (length > 0 or ($required | not));
    [inputs | select(startswith($metric + "{"))
      | capture("^[^{]*[{](?<labels>.*)[}]\\s+(?<value>\\S+)")
      | select((.value | tonumber? // 0) == 1)
      | [.labels | scan("([A-Za-z_][A-Za-z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"") | {key: .[0], value: .[1]}] | from_entries
      | {group: (.group // ""), version: (.version // ""), resource: (.resource // ""),
         subresource: (.subresource // ""), removed_release: (.removed_release // "")}
      | select((.group | name($group_len; false)) and (.version | name($name_len; true)) and (.resource | name($name_len; true))
          and (.subresource | name($name_len; false)) and (.removed_release | test($release)))
    ] | unique | .[:$max]'
}

check kubelet kubelet_healthz
check etcd etcd_health
check apiserver apiserver_readyz

if ! vm_proofs "$work"; then
  log "no proofs for k8sapi: the report is skipped"
  exit 1
fi

# send_report BODY: sends the report, its answer's headers in
# answer.headers and its HTTP status in answer.status.
send_report() {
  printf '%s' "$1" >"$work/health.json"
  k8sapi_call report 'health' "$work" /dev/null -X POST -H 'Content-Type: application/json' \
    -D "$work/answer.headers" -w '%{http_code}' --data-binary "@$work/health.json" >"$work/answer.status"
}

body="$(jq -n -c --argjson checks "$checks" '{checks: $checks}')"
# The deprecated APIs only when the API server's metrics could be read.
# A k8sapi that refuses them (400: one from before them) still takes the
# checks alone, so the node stays healthy to it.
if apis="$(deprecated_apis 2>"$work/metrics.err")"; then
  if ! send_report "$(jq -c --argjson apis "$apis" '. + {deprecated_apis: $apis}' <<<"$body")"; then
    [[ "$(cat "$work/answer.status")" == 400 ]] || { log "k8sapi did not take the report: $body"; exit 1; }
    log "k8sapi refused the deprecated APIs ${apis:0:200}; the report goes without them"
    send_report "$body" || { log "k8sapi did not take the report: $body"; exit 1; }
  fi
else
  log "the API server's deprecated APIs could not be read, the report goes without them: $(head -c 200 "$work/metrics.err")"
  send_report "$body" || { log "k8sapi did not take the report: $body"; exit 1; }
fi

# A CA rotation asks this node for a phase it has not applied: renew now,
# not at the daily timer (the renewal applies it).
if grep -qi '^X-Exk8s-Renew: *due' "$work/answer.headers"; then
  log "k8sapi asks for a renewal now (a CA rotation)"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" != "1" ]]; then
    systemctl start --no-block exk8s-renew-certificates.service || log "could not start the renewal"
  fi
fi

# A pending etcd snapshot was handed to this node (an upgrade waits on it,
# or an operator asked): take it now, not at the snapshot timer's next ask.
if grep -qi '^X-Exk8s-Snapshot: *due' "$work/answer.headers"; then
  log "k8sapi hands this node an etcd snapshot to take"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" != "1" ]]; then
    systemctl start --no-block exk8s-etcd-snapshot.service || log "could not start the etcd snapshot"
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
