#!/usr/bin/env bash
# exk8s bootstrap shim. k8sapi renders it when the cluster is founded (a
# worker's when its pool adds it) and passes it to the VM as userdata. It
# proves who this VM is (IMDS session token + access token), fetches this
# node's bundle ({{ if .Worker }}a worker's: no key, its own are made here{{ else }}a control-plane node's{{ end }}), writes every file with
# the mode the bundle names, and hands over to the bundle's scripts. If a
# step fails, it reports failed to k8sapi with the step and the tail of its
# log (the scripts report their own phases); a report proves who the VM is
# afresh, is retried briefly and never changes how the shim ends. The shell
# library below is exk8s-progress.sh's, rendered in: the bundle, which
# brings that file, does not exist yet.
#
# Knobs (production leaves them unset):
#   EXC_IMDS_BASE_URL         IMDS endpoint (default {{ (shellLib).IMDSBaseURL }})
#   EXK8S_BOOTSTRAP_BASE_URL  k8sapi endpoint (default: rendered at founding)
#   EXK8S_ROOT                prefix for every path written (default: /)
#   EXK8S_SKIP_HOST_SETUP=1   stop after writing the files
set -euo pipefail
umask 077
{{ template "exk8s-progress-lib" shellLib }}

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
DEFAULT_BOOTSTRAP_BASE_URL={{ shq .BootstrapBaseURL }}
EXK8S_CURL_PROTO="=https"
if [[ "$DEFAULT_BOOTSTRAP_BASE_URL" == http://* ]]; then
  EXK8S_CURL_PROTO="=http,https"
fi
# A {{ if .Worker }}worker{{ else }}control-plane node{{ end }} reports to its role's status route.
export EXC_IMDS_BASE_URL="${EXC_IMDS_BASE_URL:-$IMDS_DEFAULT_BASE_URL}" EXK8S_CURL_PROTO \
  EXK8S_BOOTSTRAP_BASE_URL="${EXK8S_BOOTSTRAP_BASE_URL:-$DEFAULT_BOOTSTRAP_BASE_URL}" \
  EXK8S_STATUS_ROUTE={{ if .Worker }}worker_status{{ else }}status{{ end }}
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
k8sapi_call boot {{ if .Worker }}worker_bundle{{ else }}bundle{{ end }} "$WORK" "$BUNDLE" || die "cannot fetch the bootstrap bundle"
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
{{- if .Worker }}
  log "the prerequisites are already installed in the image"
{{- else }}
  progress_report {{ phase "prerequisites_installed" }} "already installed in the image"
{{- end }}
else
  step "running exk8s-install-prereqs.sh"
  "${ROOT}/usr/local/bin/exk8s-install-prereqs.sh"
fi
{{- if .Worker }}
step "running exk8s-bootstrap-worker.sh"
systemctl daemon-reload
"${ROOT}/usr/local/bin/exk8s-bootstrap-worker.sh"
{{- else }}
step "running exk8s-bootstrap-control-plane.sh"
systemctl daemon-reload
"${ROOT}/usr/local/bin/exk8s-bootstrap-control-plane.sh"
{{- end }}
log "bootstrap finished"
