#!/usr/bin/env bash
# exk8s-progress.sh: the VM's shell library, which tells k8sapi how this
# node's bootstrap is going.
#
#   exk8s-progress.sh PHASE [MESSAGE]    report one phase by hand (exits
#                                        non-zero if k8sapi did not take it)
#   . exk8s-progress.sh                  in the bootstrap scripts, then:
#     progress_begin NAME [TAG]          log to /var/log/exk8s/NAME.log too
#                                        (lines tagged TAG), and if the
#                                        script fails, report failed with
#                                        its step and the tail of that log
#     step TEXT                          name what the script does next
#     progress_report PHASE [MESSAGE]    report a phase it has passed
#     log TEXT; die TEXT; log_as TAG     say something; say it and exit 1;
#                                        tag the lines TAG
#     retry ATTEMPTS DELAY CMD...        run CMD until it succeeds
#     load_cluster_env [NAME...]         read cluster.env, NAMEs required
#     write_file PATH MODE CMD...        CMD's output into PATH, atomically
#     remove_at_exit PATH...             remove PATHs when the script exits
#     and below: require_env, apt_install, call, vm_settings,
#     imds_session, imds_identity, vm_proofs, k8sapi_call
#
# A report proves who this VM is the way the bundle fetch did (an IMDS
# session token and the VM's access token, fresh for every report, since a
# bootstrap may outlive them), is retried briefly, and never stops or fails
# the bootstrap: k8sapi out of reach means the operator sees less, not that
# the node stops. Where to report: EXK8S_BOOTSTRAP_BASE_URL and
# EXC_IMDS_BASE_URL, exported by the userdata shim, else the progress.env
# it writes (so a script run again by hand reports too). EXK8S_ROOT, as for
# the shim, prefixes the paths this file writes and reads (tests only) but
# cluster.env's, which only the scripts on the host read.
#
# This is the only definition of these functions: the userdata shim, which
# runs before the bundle exists, carries the same text, rendered in. Routes,
# phases, paths and the time each kind of call may take are rendered from
# internal/bundle's tables (shell.go).

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

# For the node scripts of every role (not the shim, which has no kubelet
# yet): configure_kubelet_resolv_conf, start_pod_network, ask_renewal.

# configure_kubelet_resolv_conf DROPIN_DIR: on a systemd-resolved host
# /etc/resolv.conf names the local stub (127.0.0.53), which pods cannot
# reach and CoreDNS would forward to itself through: the kubelet hands pods
# the upstream servers instead, as kubeadm does (a drop-in in DROPIN_DIR).
configure_kubelet_resolv_conf() {
  local dropin="${1}/10-resolv-conf.conf"
  if systemctl is-active --quiet systemd-resolved && [[ -s /run/systemd/resolve/resolv.conf ]]; then
    printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nresolvConf: /run/systemd/resolve/resolv.conf\n' >"$dropin"
    log "systemd-resolved is active: the kubelet uses /run/systemd/resolve/resolv.conf"
  else
    rm -f "$dropin"
  fi
}

# start_pod_network CNI: what stands between the pods and the host, and
# what connects them under the cluster's CNI, started before the kubelet
# starts any pod. Pods must never
# reach IMDS (it hands out this VM's credentials): the guard's nftables
# rule comes first, and the kubelet requires it on every boot
# (exk8s-imds-guard.service). Under the bridge CNI the node routes its
# peers' pod subnets itself, on every boot before the kubelet
# (exk8s-pod-network.service); Cilium needs nothing on the host.
start_pod_network() {
  step "installing the IMDS guard"
  start_unit exk8s-imds-guard.service
  if [[ "$1" == bridge ]]; then
    step "routing the pod network to the node's peers"
    start_unit exk8s-pod-network.service
  fi
  # Under flannel the node's conflist follows flanneld's lease: written
  # whenever the lease changes (the service follows it), and removed on
  # every boot before the kubelet until flanneld writes the lease again.
  step "writing the pod network's CNI configuration from flannel's lease"
  start_unit exk8s-flannel-cni.service
}

# ask_renewal WORK ROUTE PROOF ENTRY...: the renewal's one call. For each
# ENTRY ("NAME KEY CERT ...") a certificate request signed with the KEY the
# node already holds, all sent to k8sapi's ROUTE (renew, worker_renew) with
# the proofs in WORK; the answer in WORK/renewal.json. PROOF says what else
# proves the key is the node's: "key" nothing (k8sapi holds the node's
# certificates), "certificate" each CERT beside its request (a worker's:
# k8sapi keeps no copy of them).
ask_renewal() {
  local work=$1 route=$2 proof=$3 entry name key cert certfile requests="{}"
  shift 3
  [[ "$proof" == key || "$proof" == certificate ]] || die "ask_renewal: no proof ${proof}"
  step "signing a certificate request with each key this node holds"
  for entry in "$@"; do
    read -r name key cert _ <<<"$entry"
    openssl req -new -key "${ROOT}${key}" -subj "/CN=${name}" -out "$work/${name}.csr" 2>"$work/openssl.log" ||
      { cat "$work/openssl.log" >&2; die "cannot sign with ${key}"; }
    certfile=/dev/null
    [[ "$proof" == key ]] || certfile="${ROOT}${cert}"
    requests="$(jq --arg n "$name" --arg proof "$proof" --rawfile csr "$work/${name}.csr" --rawfile cert "$certfile" \
      '.csrs[$n] = $csr | if $proof == "certificate" then .certificates[$n] = $cert else . end' <<<"$requests")"
  done
  printf '%s' "$requests" >"$work/request.json"

  step "asking k8sapi for this node's certificates"
  # A renew call, not a report's: the renewal signs every due certificate
  # and seals it (KMS) in one call, and on a busy machine one attempt can
  # outlast a report's 10 s (internal/bundle's table of calls).
  k8sapi_call renew "$route" "$work" "$work/renewal.json" -X POST -H 'Content-Type: application/json' \
    --data-binary "@$work/request.json"
  log "k8sapi renewed: $(jq -r '.renewed | join(", ") | if . == "" then "nothing" else . end' "$work/renewal.json")"
}

# answered_trust WORK FILE OUT: during a CA rotation the renewal's answer
# holds the node's trust files by path; FILE's is written to OUT. False
# when the answer holds none for FILE (no rotation asks for it).
answered_trust() {
  jq -e --arg f "$2" '(.trust // {}) | has($f)' "$1/renewal.json" >/dev/null || return 1
  jq -j --arg f "$2" '.trust[$f]' "$1/renewal.json" >"$3"
}

# apply_trust WORK CLUSTER_CA ENTRY...: writes each trust file a CA
# rotation answered that differs from the node's, ENTRY being "PATH MODE
# READER,READER..."; when the cluster CA's (CLUSTER_CA) changed, every
# kubeconfig of the node gets it as its certificate-authority-data too.
# The paths written are added to TRUST_CHANGED, their readers (what must
# restart) to TRUST_READERS.
apply_trust() {
  local work=$1 ca=$2 entry file mode readers kubeconfig b64
  local -a list
  shift 2
  TRUST_CHANGED=() TRUST_READERS=()
  for entry in "$@"; do
    read -r file mode readers <<<"$entry"
    answered_trust "$work" "$file" "$work/trust.pem" || continue
    cmp -s "$work/trust.pem" "${ROOT}${file}" && continue
    write_file "${ROOT}${file}" "$mode" cat "$work/trust.pem" || die "cannot write ${file}"
    TRUST_CHANGED+=("$file")
    IFS=, read -r -a list <<<"$readers"
    TRUST_READERS+=("${list[@]}")
    [[ "$file" == "$ca" ]] || continue
    b64="$(base64 -w0 <"$work/trust.pem")"
    for kubeconfig in "${ROOT}"/etc/exk8s/kubeconfig/*.kubeconfig; do
      [[ -e "$kubeconfig" ]] || continue
      sed "s|^\( *certificate-authority-data:\).*|\1 ${b64}|" "$kubeconfig" >"$work/ca.kubeconfig"
      write_file "$kubeconfig" 0600 cat "$work/ca.kubeconfig" || die "cannot write ${kubeconfig}"
    done
  done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -uo pipefail
  [[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 PHASE [MESSAGE]" >&2; exit 2; }
  (progress_send "$1" "${2:-}")
fi
