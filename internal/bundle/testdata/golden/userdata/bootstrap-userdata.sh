#!/usr/bin/env bash
# exk8s bootstrap shim. k8sapi renders it when the cluster is founded (a
# worker's when its pool adds it) and passes it to the VM as userdata. It
# proves who this VM is (IMDS session token + access token), fetches this
# node's bundle (a control-plane node's), writes every file with
# the mode the bundle names, and hands over to the bundle's scripts. If a
# step fails, it reports failed to k8sapi with the step and the tail of its
# log (the scripts report their own phases); a report proves who the VM is
# afresh, is retried briefly and never changes how the shim ends. The shell
# library below is exk8s-progress.sh's, rendered in: the bundle, which
# brings that file, does not exist yet.
#
# Knobs (production leaves them unset):
#   EXC_IMDS_BASE_URL         IMDS endpoint (default http://imdsapi.excloud.in)
#   EXK8S_BOOTSTRAP_BASE_URL  k8sapi endpoint (default: rendered at founding)
#   EXK8S_ROOT                prefix for every path written (default: /)
#   EXK8S_SKIP_HOST_SETUP=1   stop after writing the files
set -euo pipefail
umask 077

# --- the exk8s shell library (templates/exk8s-progress.sh) ---
ROOT="${EXK8S_ROOT:-}"
ROOT="${ROOT%/}"
CLUSTER_ENV='/etc/exk8s/config/cluster.env'
PROGRESS_ENV="${ROOT}"'/etc/exk8s/config/progress.env'
PROGRESS_LOG_DIR="${ROOT}"'/var/log/exk8s'
IMDS_DEFAULT_BASE_URL='http://imdsapi.excloud.in'
# Enough of a failure's output to see why, well inside k8sapi's limit on a
# message even if every byte had to be replaced by U+FFFD.
PROGRESS_TAIL_LINES=20
PROGRESS_TAIL_BYTES=1200
PROGRESS_STEP="starting"
PROGRESS_CLEANUP=()
LOG_TAG=exk8s-progress

# log TEXT: one line of the script's log, on stderr.
log() { printf '%s %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$LOG_TAG" "$*" >&2; }

# log_as TAG: the script's name in its log lines.
log_as() { LOG_TAG=$1; }

# die TEXT: log TEXT as fatal and exit 1.
die() {
  log "FATAL: $*"
  exit 1
}

# retry ATTEMPTS DELAY CMD...: run CMD until it succeeds or attempts run out,
# DELAY seconds after each failure. One attempt is CMD, run once.
retry() {
  local attempts=$1 delay=$2 i
  shift 2
  for ((i = 1; i <= attempts; i++)); do
    if "$@"; then
      return 0
    fi
    if ((attempts > 1)); then
      log "attempt ${i}/${attempts} failed: $*"
      sleep "$delay"
    fi
  done
  return 1
}

# start_unit UNIT...: enables and starts the units, three tries 2 s
# apart. A start can fail for a reason of the moment (seen in the node
# proof: systemd could not move a oneshot's process into its cgroup,
# status 219/CGROUP, while other machines booted beside it); a unit that
# fails three times fails the bootstrap.
start_unit() { retry 3 2 systemctl enable --now "$@"; }

# step TEXT: what the script does next; a failure report names it.
step() {
  PROGRESS_STEP="$*"
  log "step: $*"
}

# remove_at_exit PATH...: removed when the script exits (progress_begin's
# EXIT trap).
remove_at_exit() { PROGRESS_CLEANUP+=("$@"); }

# cleanup_at_exit: what remove_at_exit names is removed when a script
# that reports no phase (a timer's) exits.
cleanup_at_exit() { trap 'trap - EXIT; rm -rf "${PROGRESS_CLEANUP[@]}" || true' EXIT; }

# ask_k8sapi ROUTE WORK: a timer's ask of k8sapi's VM route ROUTE (its kind
# of call too) with this VM's fresh proofs, in WORK, the answer in
# WORK/answer.json; the script fails if k8sapi did not answer. Fails (1)
# when k8sapi has nothing for this node (204).
ask_k8sapi() {
  vm_proofs "$2" || die "no proofs for k8sapi"
  k8sapi_call "$1" "$1" "$2" "$2/answer.json" || die "k8sapi did not answer ${1}"
  [[ -s "$2/answer.json" ]]
}

# write_file PATH MODE CMD...: CMD's output, written to PATH with MODE
# atomically: into a new file beside it, renamed over it once whole. Each
# step checks its own result, so it may run as a condition.
write_file() {
  local dest=$1 mode=$2 tmp
  shift 2
  mkdir -p "$(dirname "$dest")" || return 1
  tmp="$(mktemp "${dest}.XXXXXX")" || return 1
  if "$@" >"$tmp" && chmod "$mode" "$tmp" && mv -f "$tmp" "$dest"; then
    return 0
  fi
  rm -f "$tmp"
  return 1
}

# signed_for CA KEY CERT: CERT chains to CA and is for KEY: what a worker
# checks of every certificate k8sapi answers before it installs it.
signed_for() {
  openssl verify -CAfile "$1" "$3" >/dev/null &&
    [[ "$(openssl x509 -noout -pubkey -in "$3")" == "$(openssl pkey -pubout -in "$2")" ]]
}

# load_cluster_env [NAME...]: the cluster's facts (cluster.env), exported;
# dies unless each NAME is set.
load_cluster_env() {
  [[ -f "$CLUSTER_ENV" ]] || die "missing ${CLUSTER_ENV}"
  set -a
  # shellcheck source=/dev/null
  . "$CLUSTER_ENV"
  set +a
  require_env "$@"
}

# require_env NAME...: dies unless each NAME is set.
require_env() {
  local name
  for name in "$@"; do
    [[ -n "${!name:-}" ]] || die "${name} missing from cluster.env"
  done
}

# apt_install PACKAGE...: PACKAGEs from the host's package mirror.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  retry 5 10 apt-get update -y || die "apt-get update failed"
  retry 5 10 apt-get install -y "$@" || die "apt-get install $* failed"
}

# call KIND OUT URL [CURL ARGS...]: URL's answer into OUT, within the limits
# of KIND, tried again as KIND says (internal/bundle's table of calls).
# Headers come from files (-H @FILE), so no token ever shows up in the
# process list; URL @FILE is curl's config FILE naming the URL (a
# presigned URL is a credential too).
call() {
  local kind=$1 out=$2 url=$3 attempts interval
  local -a limits target=("$url")
  [[ "$url" != @* ]] || target=(-K "${url#@}")
  shift 3
  case "$kind" in
    report) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 10 --retry 3 --retry-delay 2 --retry-max-time 20 --retry-connrefused) ;;
    renew) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 60 --retry 6 --retry-delay 10 --retry-max-time 300 --retry-connrefused) ;;
    snapshot) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 30 --retry 3 --retry-delay 2 --retry-max-time 30 --retry-connrefused) ;;
    etcd_crl) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 10 --retry 2 --retry-delay 2 --retry-max-time 20 --retry-connrefused) ;;
    etcd_membership) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 10 --retry 2 --retry-delay 2 --retry-max-time 20 --retry-connrefused) ;;
    addons) attempts=1 interval=0 limits=(--connect-timeout 5 --max-time 30 --retry 4 --retry-delay 3 --retry-max-time 60 --retry-connrefused) ;;
    upload) attempts=1 interval=0 limits=(--connect-timeout 10 --retry 3 --retry-delay 5 --retry-connrefused) ;;
    boot) attempts=120 interval=5 limits=(--connect-timeout 5 --max-time 60) ;;
    boot_identity) attempts=60 interval=5 limits=(--connect-timeout 5 --max-time 60) ;;
    download) attempts=3 interval=5 limits=(--connect-timeout 10 --retry 5 --retry-delay 3 --retry-connrefused) ;;
    *)
      log "no kind of call ${kind}"
      return 2
      ;;
  esac
  retry "$attempts" "$interval" curl -fsS "${limits[@]}" "$@" -o "$out" "${target[@]}"
}

# vm_settings: where this VM's calls go: IMDS_BASE_URL, K8SAPI_BASE_URL,
# K8SAPI_PROTO, the protocols curl may use towards k8sapi (https only,
# redirects included, unless the shim was rendered for a local run), and
# STATUS_ROUTE, the route its role reports to (status; a worker's
# worker_status). What the environment says wins (EXC_IMDS_BASE_URL,
# EXK8S_BOOTSTRAP_BASE_URL, EXK8S_CURL_PROTO, EXK8S_STATUS_ROUTE);
# progress.env fills in the rest, leaving the environment as it is.
vm_settings() {
  local imds="${EXC_IMDS_BASE_URL:-}" base="${EXK8S_BOOTSTRAP_BASE_URL:-}" proto="${EXK8S_CURL_PROTO:-}" route="${EXK8S_STATUS_ROUTE:-}"
  local EXC_IMDS_BASE_URL="" EXK8S_BOOTSTRAP_BASE_URL="" EXK8S_CURL_PROTO="" EXK8S_STATUS_ROUTE=""
  if [[ -r "$PROGRESS_ENV" ]]; then
    # shellcheck source=/dev/null
    . "$PROGRESS_ENV" || return 1
  fi
  IMDS_BASE_URL="${imds:-${EXC_IMDS_BASE_URL:-$IMDS_DEFAULT_BASE_URL}}"
  K8SAPI_BASE_URL="${base:-$EXK8S_BOOTSTRAP_BASE_URL}"
  K8SAPI_BASE_URL="${K8SAPI_BASE_URL%/}"
  K8SAPI_PROTO="${proto:-${EXK8S_CURL_PROTO:-=https}}"
  STATUS_ROUTE="${route:-${EXK8S_STATUS_ROUTE:-status}}"
}

# save_vm_settings: vm_settings into progress.env, for the scripts.
save_vm_settings() {
  write_file "$PROGRESS_ENV" 0600 printf 'EXC_IMDS_BASE_URL=%q\nEXK8S_BOOTSTRAP_BASE_URL=%q\nEXK8S_CURL_PROTO=%q\nEXK8S_STATUS_ROUTE=%q\n' \
    "$IMDS_BASE_URL" "$K8SAPI_BASE_URL" "$K8SAPI_PROTO" "$STATUS_ROUTE"
}

# imds_session WORK KIND: an IMDS session token (a KIND call), as curl's
# header file WORK/imds.header. As the two below, each step checks its own
# result: callers run them as conditions, where set -e does not apply.
imds_session() {
  local work=$1 kind=$2
  call "$kind" "$work/imds-token" "${IMDS_BASE_URL}/token" || return 1
  [[ -s "$work/imds-token" ]] || { log "IMDS returned an empty session token"; return 1; }
  printf 'X-exc-imds-token: %s\n' "$(cat "$work/imds-token")" >"$work/imds.header"
}

# imds_identity WORK KIND: with the session, this VM's id in WORK/node and
# its access token as curl's header file WORK/auth.header (KIND calls).
imds_identity() {
  local work=$1 kind=$2 node token
  call "$kind" "$work/identity.json" "${IMDS_BASE_URL}/latest/identity/node-identity" -H "@$work/imds.header" || return 1
  node="$(jq -r '.node_id // empty' "$work/identity.json")"
  [[ "$node" =~ ^[1-9][0-9]*$ ]] || { log "IMDS returned no usable node_id"; return 1; }
  call "$kind" "$work/access.json" "${IMDS_BASE_URL}/latest/identity/access-token" -H "@$work/imds.header" || return 1
  token="$(jq -r '.access_token // empty' "$work/access.json")"
  [[ -n "$token" ]] || { log "IMDS returned no access token"; return 1; }
  printf 'Authorization: Bearer %s\n' "$token" >"$work/auth.header" || return 1
  printf '%s\n' "$node" >"$work/node"
}

# vm_proofs WORK: where this VM's calls go (vm_settings) and its proofs for
# k8sapi's VM routes into WORK, fresh from IMDS (briefly, as for a report);
# none for a k8sapi curl may not reach.
vm_proofs() {
  vm_settings || return 1
  [[ -n "$K8SAPI_BASE_URL" ]] || { log "no EXK8S_BOOTSTRAP_BASE_URL and no ${PROGRESS_ENV}"; return 1; }
  if [[ "$K8SAPI_PROTO" == "=https" && "$K8SAPI_BASE_URL" != https://* ]]; then
    log "k8sapi is reached over https only, not at ${K8SAPI_BASE_URL}"
    return 1
  fi
  imds_session "$1" report && imds_identity "$1" report
}

# k8sapi_path ROUTE VM_ID: the path of one of k8sapi's VM routes.
k8sapi_path() {
  local path
  case "$1" in
    bundle) path='/bootstrap/control-plane/{vm_id}' ;;
    status) path='/bootstrap/control-plane/{vm_id}/status' ;;
    renew) path='/bootstrap/control-plane/{vm_id}/renew' ;;
    etcd_snapshot) path='/bootstrap/control-plane/{vm_id}/etcd-snapshot' ;;
    etcd_restore) path='/bootstrap/control-plane/{vm_id}/etcd-restore' ;;
    etcd_crl) path='/bootstrap/control-plane/{vm_id}/etcd-crl' ;;
    etcd_membership) path='/bootstrap/control-plane/{vm_id}/etcd-membership' ;;
    addons) path='/bootstrap/control-plane/{vm_id}/addons' ;;
    worker_bundle) path='/bootstrap/worker/{vm_id}' ;;
    worker_csr) path='/bootstrap/worker/{vm_id}/csr' ;;
    worker_status) path='/bootstrap/worker/{vm_id}/status' ;;
    worker_renew) path='/bootstrap/worker/{vm_id}/renew' ;;
    health) path='/bootstrap/control-plane/{vm_id}/health' ;;
    worker_health) path='/bootstrap/worker/{vm_id}/health' ;;
    *) return 1 ;;
  esac
  printf '%s' "${path/"{vm_id}"/$2}"
}

# k8sapi_call KIND ROUTE WORK OUT [CURL ARGS...]: a KIND call to k8sapi's
# ROUTE for this VM, with the proofs in WORK, over the protocols k8sapi may
# be reached by; the answer in OUT.
k8sapi_call() {
  local kind=$1 route=$2 work=$3 out=$4 path
  shift 4
  path="$(k8sapi_path "$route" "$(cat "$work/node")")" || { log "k8sapi has no VM route ${route}"; return 1; }
  call "$kind" "$out" "${K8SAPI_BASE_URL}${path}" --proto "$K8SAPI_PROTO" --proto-redir "$K8SAPI_PROTO" \
    -H "@$work/imds.header" -H "@$work/auth.header" "$@"
}

# progress_send PHASE MESSAGE: the report itself, run in a subshell.
progress_send() {
  # work is not local: the subshell's EXIT trap reads it once this returns.
  work="$(mktemp -d)" || return 1
  trap 'rm -rf "$work"' EXIT
  vm_proofs "$work" || return 1
  jq -n --arg phase "$1" --arg message "$2" '{phase: $phase, message: $message}' >"$work/status.json" || return 1
  k8sapi_call report "$STATUS_ROUTE" "$work" /dev/null -X POST -H 'Content-Type: application/json' --data-binary "@$work/status.json"
}

# progress_report PHASE [MESSAGE]: report PHASE; never fails.
progress_report() {
  if (progress_send "$1" "${2:-}"); then
    log "reported ${1}"
  else
    log "could not report ${1}; the bootstrap goes on"
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

# progress_exit STATUS: the EXIT trap of a script that began progress. It
# always waits for tee: a unit's script that exits while its tee still
# writes leaves a process behind, which the manager then kills; the node
# proof saw that wait take the renewal unit's whole stop timeout and fail
# a renewal that had succeeded.
progress_exit() {
  trap - EXIT
  progress_drain_log
  if (($1 != 0)); then
    progress_report failed "$(progress_failure "$1")"
  fi
  rm -rf "${PROGRESS_CLEANUP[@]}" || true
  exit "$1"
}

# progress_begin NAME [TAG]: see the top of exk8s-progress.sh.
progress_begin() {
  PROGRESS_NAME=$1
  PROGRESS_LOG="${PROGRESS_LOG_DIR}/${1}.log"
  if (($# > 1)); then
    log_as "$2"
  fi
  mkdir -p "$PROGRESS_LOG_DIR"
  exec {PROGRESS_STDOUT}>&1 {PROGRESS_STDERR}>&2
  exec > >(tee -a "$PROGRESS_LOG") 2>&1
  PROGRESS_TEE_PID=$!
  set -o errtrace
  trap 'PROGRESS_FAILED_COMMAND=$BASH_COMMAND' ERR
  trap 'progress_exit $?' EXIT
}
# --- end of the exk8s shell library ---

# Logs to /var/log/exk8s/bootstrap-userdata.log too; a failure reports
# failed.
progress_begin bootstrap-userdata exk8s-userdata

# Where this VM's calls go: what the environment says, else IMDS's default
# and the k8sapi this shim was rendered for. k8sapi hands out keys: its
# calls go over https only, redirects included, whatever
# EXK8S_BOOTSTRAP_BASE_URL says. Only a shim rendered for a local run (an
# http base URL, which k8sapi refuses outside LOCAL_RUN) allows http. The
# bundle's scripts report their phases to the same places, the same way
# (exported here, saved in progress.env below).
DEFAULT_BOOTSTRAP_BASE_URL='https://k8sapi.excloud.in'
EXK8S_CURL_PROTO="=https"
if [[ "$DEFAULT_BOOTSTRAP_BASE_URL" == http://* ]]; then
  EXK8S_CURL_PROTO="=http,https"
fi
# A control-plane node reports to its role's status route.
export EXC_IMDS_BASE_URL="${EXC_IMDS_BASE_URL:-$IMDS_DEFAULT_BASE_URL}" EXK8S_CURL_PROTO \
  EXK8S_BOOTSTRAP_BASE_URL="${EXK8S_BOOTSTRAP_BASE_URL:-$DEFAULT_BOOTSTRAP_BASE_URL}" \
  EXK8S_STATUS_ROUTE=status
vm_settings
if [[ "$K8SAPI_PROTO" == "=https" && "$K8SAPI_BASE_URL" != https://* ]]; then
  # Said at once, not retried for ten minutes: curl would refuse it anyway.
  die "the k8sapi base URL must be https, got ${K8SAPI_BASE_URL}"
fi

step "checking for curl and jq"
if ! command -v curl >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "curl and jq are required"
  apt_install curl jq
fi

WORK="$(mktemp -d)"
remove_at_exit "$WORK"

step "fetching an IMDS session token from ${IMDS_BASE_URL}"
imds_session "$WORK" boot || die "no IMDS session token from ${IMDS_BASE_URL}"

step "reading the node identity and access token from IMDS"
imds_identity "$WORK" boot_identity || die "cannot read the node identity and access token from IMDS"
NODE_ID="$(cat "$WORK/node")"

BUNDLE="$WORK/bundle.json"
step "fetching the bundle of VM ${NODE_ID} from ${K8SAPI_BASE_URL}"
k8sapi_call boot bundle "$WORK" "$BUNDLE" || die "cannot fetch the bootstrap bundle"
jq -e '(.files | type == "object") and (.files | all(.[]; type == "string")) and ((.file_modes // {}) | type == "object")' \
  "$BUNDLE" >/dev/null || die "bundle is not a JSON object of files"

# The only directories a bundle may write into: what a node's files are. Anything else (a unit elsewhere, /root/.ssh, /etc/sudoers.d)
# is refused before a single file is written.
ALLOWED_DIRS=(/etc/exk8s/ /etc/kubernetes/ /etc/systemd/system/ /etc/cni/net.d/ /usr/local/bin/ /var/lib/kubelet/)

# allowed PATH: PATH is absolute, has no "..", "//" or "/./", and lies
# under one of ALLOWED_DIRS.
allowed() {
  local path=$1 dir
  [[ "$path" == /* && "$path" != *..* && "$path" != *//* && "$path" != */./* ]] || return 1
  for dir in "${ALLOWED_DIRS[@]}"; do
    [[ "$path" == "$dir"?* ]] && return 0
  done
  return 1
}

step "writing the bundle's files"
# One "<mode> <content> <path>" line per file, in one pass over the bundle
# (a jq per file took seconds): files without a mode get 0644, the content
# is base64 ("-" when empty) and the path is the rest of the line.
jq -r '(.file_modes // {}) as $modes | .files | to_entries[]
  | "\($modes[.key] // "0644") \(if .value == "" then "-" else (.value | @base64) end) \(.key)"' "$BUNDLE" >"$WORK/files"
while read -r _ _ path; do
  allowed "$path" || die "refusing a path outside the allowed directories in bundle: ${path}"
done <"$WORK/files"
count=0
while read -r mode content path; do
  [[ "$mode" =~ ^0?[0-7]{3}$ ]] || die "bad mode ${mode} for ${path}"
  [[ "$content" != - ]] || content=""
  write_file "${ROOT}${path}" "$mode" base64 -d <<<"$content"
  count=$((count + 1))
done <"$WORK/files"
log "wrote ${count} files under ${ROOT:-/}"

# So a script run again by hand reports to the same places, the same way.
save_vm_settings

if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
  log "EXK8S_SKIP_HOST_SETUP=1: files written, skipping host setup"
  exit 0
fi

if command -v kubelet >/dev/null 2>&1; then
  progress_report prerequisites_installed "already installed in the image"
else
  step "running exk8s-install-prereqs.sh"
  "${ROOT}/usr/local/bin/exk8s-install-prereqs.sh"
fi
step "running exk8s-bootstrap-control-plane.sh"
systemctl daemon-reload
"${ROOT}/usr/local/bin/exk8s-bootstrap-control-plane.sh"
log "bootstrap finished"
