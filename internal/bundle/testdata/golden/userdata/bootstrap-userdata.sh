#!/usr/bin/env bash
# exk8s bootstrap shim. k8sapi renders it when the cluster is founded and
# passes it to the VM as userdata. It proves who this VM is (IMDS session
# token + access token), fetches this node's bundle, writes every file with
# the mode the bundle names, and hands over to the bundle's scripts. If a
# step fails once it holds the VM's credentials, it reports failed to k8sapi
# with the step and the tail of its log (the scripts report their own
# phases); a report is retried briefly and never changes how the shim ends.
#
# Knobs (production leaves them unset):
#   EXC_IMDS_BASE_URL         IMDS endpoint (default http://imdsapi.excloud.in)
#   EXK8S_BOOTSTRAP_BASE_URL  k8sapi endpoint (default: rendered at founding)
#   EXK8S_ROOT                prefix for every path written (default: /)
#   EXK8S_SKIP_HOST_SETUP=1   stop after writing the files
set -euo pipefail
umask 077

ROOT="${EXK8S_ROOT:-}"
ROOT="${ROOT%/}"
LOG_DIR="${ROOT}/var/log/exk8s"
mkdir -p "$LOG_DIR"
LOG_FILE="${LOG_DIR}/bootstrap-userdata.log"
exec > >(tee -a "$LOG_FILE") 2>&1

IMDS_BASE_URL="${EXC_IMDS_BASE_URL:-http://imdsapi.excloud.in}"
DEFAULT_BOOTSTRAP_BASE_URL='https://k8sapi.excloud.in'
BOOTSTRAP_BASE_URL="${EXK8S_BOOTSTRAP_BASE_URL:-$DEFAULT_BOOTSTRAP_BASE_URL}"
BOOTSTRAP_BASE_URL="${BOOTSTRAP_BASE_URL%/}"
# k8sapi hands out keys: its calls go over https only, redirects included,
# whatever EXK8S_BOOTSTRAP_BASE_URL says. Only a shim rendered for a local
# run (an http base URL, which k8sapi refuses outside LOCAL_RUN) allows http.
K8SAPI_PROTO="=https"
if [[ "$DEFAULT_BOOTSTRAP_BASE_URL" == http://* ]]; then
  K8SAPI_PROTO="=http,https"
elif [[ "$BOOTSTRAP_BASE_URL" != https://* ]]; then
  # Said at once, not retried for ten minutes: curl would refuse it anyway.
  printf 'exk8s-userdata: FATAL: the k8sapi base URL must be https, got %s\n' "$BOOTSTRAP_BASE_URL" >&2
  exit 1
fi
# The bundle's scripts report their phases to the same places, the same way.
export EXC_IMDS_BASE_URL="$IMDS_BASE_URL" EXK8S_BOOTSTRAP_BASE_URL="$BOOTSTRAP_BASE_URL" EXK8S_CURL_PROTO="$K8SAPI_PROTO"

log() { printf '%s exk8s-userdata: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# step TEXT: what the shim does next; a failure report names it.
STEP="starting"
step() {
  STEP="$*"
  log "$*"
}

# retry ATTEMPTS DELAY CMD...: run CMD until it succeeds or attempts run out.
retry() {
  local attempts=$1 delay=$2 i
  shift 2
  for ((i = 1; i <= attempts; i++)); do
    if "$@"; then
      return 0
    fi
    log "attempt ${i}/${attempts} failed: $*"
    sleep "$delay"
  done
  return 1
}

# get OUT URL [CURL ARGS...]: download URL into OUT; headers come from files
# (-H @file) so no token ever shows up in the process list.
get() {
  local out=$1 url=$2
  shift 2
  curl -fsS --connect-timeout 5 --max-time 60 "$@" -o "$out" "$url"
}

step "checking for curl and jq"
if ! command -v curl >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    retry 5 10 apt-get update -y || die "apt-get update failed"
    retry 5 10 apt-get install -y curl jq || die "cannot install curl and jq"
  else
    die "curl and jq are required"
  fi
fi

# report PHASE MESSAGE: tell k8sapi, once the VM's credentials are known;
# curl retries what is worth retrying, briefly; never fatal.
report() {
  [[ -s "$WORK/auth.header" && -n "${NODE_ID:-}" ]] || return 0
  if ! jq -n --arg phase "$1" --arg message "$2" '{phase: $phase, message: $message}' >"$WORK/status.json" ||
    ! curl -fsS --connect-timeout 5 --max-time 10 --retry 3 --retry-delay 2 --retry-max-time 20 --retry-connrefused \
      --proto "$K8SAPI_PROTO" --proto-redir "$K8SAPI_PROTO" -X POST -H "@$WORK/imds.header" -H "@$WORK/auth.header" -H 'Content-Type: application/json' \
      --data-binary "@$WORK/status.json" -o /dev/null "${BOOTSTRAP_BASE_URL}/bootstrap/control-plane/${NODE_ID}/status"; then
    log "could not report ${1}; the bootstrap goes on"
  fi
}

# on_exit STATUS: a failure is reported with its step and the last lines of
# the log, without control characters and well inside k8sapi's 4096 bytes.
on_exit() {
  if (($1 != 0)); then
    report failed "$(printf 'bootstrap-userdata: step "%s" failed (exit %d)\n--- last lines of %s ---\n' "$STEP" "$1" "$LOG_FILE"
      tail -n 20 "$LOG_FILE" | tail -c 1200 | tr -d '\000-\010\013-\037\177')"
  fi
  rm -rf "$WORK"
}

WORK="$(mktemp -d)"
trap 'on_exit $?' EXIT

step "fetching an IMDS session token from ${IMDS_BASE_URL}"
retry 120 5 get "$WORK/imds-token" "${IMDS_BASE_URL}/token" || die "no IMDS session token from ${IMDS_BASE_URL}"
IMDS_TOKEN="$(cat "$WORK/imds-token")"
[[ -n "$IMDS_TOKEN" ]] || die "IMDS returned an empty session token"
printf 'X-exc-imds-token: %s\n' "$IMDS_TOKEN" >"$WORK/imds.header"

step "reading the node identity and access token from IMDS"
retry 60 5 get "$WORK/node-identity.json" "${IMDS_BASE_URL}/latest/identity/node-identity" -H "@$WORK/imds.header" ||
  die "cannot read node identity from IMDS"
NODE_ID="$(jq -r '.node_id // empty' "$WORK/node-identity.json")"
[[ "$NODE_ID" =~ ^[1-9][0-9]*$ ]] || die "IMDS returned no usable node_id"

retry 60 5 get "$WORK/access-token.json" "${IMDS_BASE_URL}/latest/identity/access-token" -H "@$WORK/imds.header" ||
  die "cannot read access token from IMDS"
ACCESS_TOKEN="$(jq -r '.access_token // empty' "$WORK/access-token.json")"
[[ -n "$ACCESS_TOKEN" ]] || die "IMDS returned no access token"
printf 'Authorization: Bearer %s\n' "$ACCESS_TOKEN" >"$WORK/auth.header"

BUNDLE="$WORK/bundle.json"
step "fetching the bundle of VM ${NODE_ID} from ${BOOTSTRAP_BASE_URL}"
retry 120 5 get "$BUNDLE" "${BOOTSTRAP_BASE_URL}/bootstrap/control-plane/${NODE_ID}" \
  --proto "$K8SAPI_PROTO" --proto-redir "$K8SAPI_PROTO" \
  -H "@$WORK/imds.header" -H "@$WORK/auth.header" || die "cannot fetch the bootstrap bundle"
jq -e '(.files | type == "object") and (.files | all(.[]; type == "string")) and ((.file_modes // {}) | type == "object")' \
  "$BUNDLE" >/dev/null || die "bundle is not a JSON object of files"

# The only directories a bundle may write into: what a control-plane node's
# files are. Anything else (a unit elsewhere, /root/.ssh, /etc/sudoers.d)
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

# write_file MODE PATH: write one bundle file atomically with its mode.
write_file() {
  local mode=$1 path=$2 dest tmp
  allowed "$path" || die "refusing a path outside the allowed directories in bundle: ${path}"
  [[ "$mode" =~ ^0?[0-7]{3}$ ]] || die "bad mode ${mode} for ${path}"
  dest="${ROOT}${path}"
  mkdir -p "$(dirname "$dest")"
  tmp="$(mktemp "${dest}.XXXXXX")"
  jq -j --arg p "$path" '.files[$p]' "$BUNDLE" >"$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dest"
}

step "writing the bundle's files"
# One "<mode> <path>" line per file; files without a mode get 0644.
jq -r '(.file_modes // {}) as $modes | .files | keys[] | "\($modes[.] // "0644") \(.)"' "$BUNDLE" >"$WORK/files"
while read -r _ path; do
  allowed "$path" || die "refusing a path outside the allowed directories in bundle: ${path}"
done <"$WORK/files"
count=0
while read -r mode path; do
  write_file "$mode" "$path"
  count=$((count + 1))
done <"$WORK/files"
log "wrote ${count} files under ${ROOT:-/}"

# So a script run again by hand reports to the same places, the same way.
mkdir -p "${ROOT}/etc/exk8s/config"
printf 'EXC_IMDS_BASE_URL=%q\nEXK8S_BOOTSTRAP_BASE_URL=%q\nEXK8S_CURL_PROTO=%q\n' "$IMDS_BASE_URL" "$BOOTSTRAP_BASE_URL" "$K8SAPI_PROTO" \
  >"${ROOT}/etc/exk8s/config/progress.env"

if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
  log "EXK8S_SKIP_HOST_SETUP=1: files written, skipping host setup"
  exit 0
fi

if command -v kubelet >/dev/null 2>&1; then
  report prerequisites_installed "already installed in the image"
else
  step "running exk8s-install-control-plane-prereqs.sh"
  "${ROOT}/usr/local/bin/exk8s-install-control-plane-prereqs.sh"
fi
step "running exk8s-bootstrap-control-plane.sh"
systemctl daemon-reload
"${ROOT}/usr/local/bin/exk8s-bootstrap-control-plane.sh"
log "bootstrap finished"
