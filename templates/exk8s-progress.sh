#!/usr/bin/env bash
# exk8s-progress.sh: tells k8sapi how this node's bootstrap is going.
#
#   exk8s-progress.sh PHASE [MESSAGE]    report one phase by hand (exits
#                                        non-zero if k8sapi did not take it)
#   . exk8s-progress.sh                  in the bootstrap scripts, then:
#     progress_begin NAME                log to /var/log/exk8s/NAME.log too,
#                                        and if the script fails, report
#                                        failed with its step and the tail
#                                        of that log
#     step TEXT                          name what the script does next
#     progress_report PHASE [MESSAGE]    report a phase it has passed
#     retry ATTEMPTS DELAY CMD...        run CMD until it succeeds
#
# A report proves who this VM is the way the bundle fetch did (an IMDS
# session token and the VM's access token, fresh for every report, since a
# bootstrap may outlive them), is retried briefly, and never stops or fails
# the bootstrap: k8sapi out of reach means the operator sees less, not that
# the node stops. Where to report: EXK8S_BOOTSTRAP_BASE_URL and
# EXC_IMDS_BASE_URL, exported by the userdata shim, else the progress.env
# it writes (so a script run again by hand reports too). EXK8S_ROOT, as for
# the shim, prefixes the paths this file writes and reads (tests only).

PROGRESS_ENV="${EXK8S_ROOT:-}/etc/exk8s/config/progress.env"
PROGRESS_LOG_DIR="${EXK8S_ROOT:-}/var/log/exk8s"
PROGRESS_STEP="starting"
# Enough of a failure's output to see why, well inside k8sapi's 4096-byte
# limit on a message even if every byte had to be replaced by U+FFFD.
PROGRESS_TAIL_LINES=20
PROGRESS_TAIL_BYTES=1200

progress_log() { printf '%s exk8s-progress: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }

# retry ATTEMPTS DELAY CMD...: run CMD until it succeeds or attempts run out.
retry() {
  local attempts=$1 delay=$2 i
  shift 2
  for ((i = 1; i <= attempts; i++)); do
    if "$@"; then
      return 0
    fi
    progress_log "attempt ${i}/${attempts} failed: $*"
    sleep "$delay"
  done
  return 1
}

# step TEXT: what the script does next; a failure report names it.
step() {
  PROGRESS_STEP="$*"
  progress_log "step: $*"
}

# progress_get OUT URL [CURL ARGS...]: one request, retried briefly on what
# is worth retrying (no answer, 408, 429, 5xx); headers come from files so
# no token shows up in the process list.
progress_get() {
  local out=$1 url=$2
  shift 2
  curl -fsS --connect-timeout 5 --max-time 10 --retry 3 --retry-delay 2 --retry-max-time 20 --retry-connrefused "$@" -o "$out" "$url"
}

# progress_credentials WORK: this VM's proofs for k8sapi's VM routes, fresh
# from IMDS: curl header files WORK/imds.header and WORK/auth.header, the
# VM's id in WORK/node, k8sapi's base URL in WORK/base and the protocols
# curl may use towards it in WORK/proto (also used by
# exk8s-renew-certificates.sh). Each step checks its own result: callers
# run it as a condition, where set -e does not apply.
progress_credentials() {
  local work=$1 imds base proto node
  # What the environment says wins; progress.env fills in the rest.
  imds="${EXC_IMDS_BASE_URL:-}" base="${EXK8S_BOOTSTRAP_BASE_URL:-}" proto="${EXK8S_CURL_PROTO:-}"
  if [[ -r "$PROGRESS_ENV" ]]; then
    # shellcheck source=/dev/null
    . "$PROGRESS_ENV"
  fi
  imds="${imds:-${EXC_IMDS_BASE_URL:-http://imdsapi.excloud.in}}"
  base="${base:-${EXK8S_BOOTSTRAP_BASE_URL:-}}"
  # k8sapi over https only (redirects included), unless the shim was
  # rendered for a local run (its EXK8S_CURL_PROTO, exported and saved).
  proto="${proto:-${EXK8S_CURL_PROTO:-=https}}"
  [[ -n "$base" ]] || { progress_log "no EXK8S_BOOTSTRAP_BASE_URL and no ${PROGRESS_ENV}"; return 1; }
  progress_get "$work/imds-token" "${imds}/token" || return 1
  printf 'X-exc-imds-token: %s\n' "$(cat "$work/imds-token")" >"$work/imds.header"
  progress_get "$work/identity.json" "${imds}/latest/identity/node-identity" -H "@$work/imds.header" || return 1
  node="$(jq -r '.node_id // empty' "$work/identity.json")"
  [[ "$node" =~ ^[1-9][0-9]*$ ]] || { progress_log "IMDS returned no usable node_id"; return 1; }
  progress_get "$work/access.json" "${imds}/latest/identity/access-token" -H "@$work/imds.header" || return 1
  printf 'Authorization: Bearer %s\n' "$(jq -r '.access_token // empty' "$work/access.json")" >"$work/auth.header"
  printf '%s\n' "$node" >"$work/node"
  printf '%s\n' "${base%/}" >"$work/base"
  printf '%s\n' "$proto" >"$work/proto"
}

# progress_send PHASE MESSAGE: the report itself, run in a subshell.
progress_send() {
  # work is not local: the subshell's EXIT trap reads it once this returns.
  work="$(mktemp -d)" || return 1
  trap 'rm -rf "$work"' EXIT
  progress_credentials "$work" || return 1
  jq -n --arg phase "$1" --arg message "$2" '{phase: $phase, message: $message}' >"$work/status.json" || return 1
  progress_get /dev/null "$(cat "$work/base")/bootstrap/control-plane/$(cat "$work/node")/status" -X POST \
    --proto "$(cat "$work/proto")" --proto-redir "$(cat "$work/proto")" \
    -H "@$work/imds.header" -H "@$work/auth.header" -H 'Content-Type: application/json' --data-binary "@$work/status.json"
}

# progress_report PHASE [MESSAGE]: report PHASE; never fails.
progress_report() {
  if (progress_send "$1" "${2:-}"); then
    progress_log "reported ${1}"
  else
    progress_log "could not report ${1}; the bootstrap goes on"
  fi
  return 0
}

# progress_failure STATUS: the failed report's message: the script, its
# step, the command that failed, and the last lines of its output, without
# control characters.
progress_failure() {
  printf '%s: step "%s" failed (exit %d)' "$PROGRESS_NAME" "$PROGRESS_STEP" "$1"
  if [[ -n "${PROGRESS_FAILED_COMMAND:-}" ]]; then
    printf ': %.200s' "$PROGRESS_FAILED_COMMAND"
  fi
  printf '\n--- last lines of %s ---\n' "$PROGRESS_LOG"
  tail -n "$PROGRESS_TAIL_LINES" "$PROGRESS_LOG" 2>/dev/null | tail -c "$PROGRESS_TAIL_BYTES" | tr -d '\000-\010\013-\037\177'
}

# progress_drain_log: give the script back its own output and wait (up to
# 2 s) for tee to write the last of it to the log: tee runs on its own, and
# a failure's last lines are the ones the report needs.
progress_drain_log() {
  exec 1>&"$PROGRESS_STDOUT" 2>&"$PROGRESS_STDERR"
  local i
  for ((i = 0; i < 40; i++)); do
    kill -0 "$PROGRESS_TEE_PID" 2>/dev/null || return 0
    sleep 0.05
  done
}

# progress_exit STATUS: the EXIT trap of a script that began progress.
progress_exit() {
  trap - EXIT
  if (($1 != 0)); then
    progress_drain_log
    progress_report failed "$(progress_failure "$1")"
  fi
  exit "$1"
}

# progress_begin NAME: see the top of this file.
progress_begin() {
  PROGRESS_NAME=$1
  PROGRESS_LOG="${PROGRESS_LOG_DIR}/${1}.log"
  mkdir -p "$PROGRESS_LOG_DIR"
  exec {PROGRESS_STDOUT}>&1 {PROGRESS_STDERR}>&2
  exec > >(tee -a "$PROGRESS_LOG") 2>&1
  PROGRESS_TEE_PID=$!
  set -o errtrace
  trap 'PROGRESS_FAILED_COMMAND=$BASH_COMMAND' ERR
  trap 'progress_exit $?' EXIT
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -uo pipefail
  [[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 PHASE [MESSAGE]" >&2; exit 2; }
  (progress_send "$1" "${2:-}")
fi
