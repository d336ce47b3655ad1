#!/usr/bin/env bash
# exk8s-etcd-snapshot.sh: takes the etcd snapshot k8sapi asks this node
# for, run every few minutes by exk8s-etcd-snapshot.timer once the node is
# ready (docs/ETCD-SNAPSHOTS.md). It asks k8sapi
# (GET /bootstrap/control-plane/{vm_id}/etcd-snapshot, the bundle's proofs)
# whether this node is the one chosen for a pending snapshot of its
# cluster; nothing pending for it: it exits. Chosen: it saves a snapshot of
# the local member with etcdctl as the node's etcd client, computes its
# SHA-256, PUTs it to the presigned URL k8sapi answered (one object key,
# minutes of life: the node holds no storage credential), and reports size
# and digest (POST, same route), which k8sapi checks against the stored
# object. A failure once a snapshot was handed out is reported to that
# route with its step; the node's bootstrap phase is never touched. The
# URL never shows on a command line (curl reads it from a file).
# EXK8S_ROOT prefixes every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-etcd-snapshot
ETCD_ENDPOINT='https://127.0.0.1:2379'
ETCD_CACERT="${ROOT}"'/etc/exk8s/pki/etcd-ca.pem'
ETCD_CERT="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client.pem'
ETCD_KEY="${ROOT}"'/etc/exk8s/pki/apiserver-etcd-client-key.pem'
SNAPSHOT_DIR="${ROOT}"'/var/lib/exk8s/etcd-snapshots'

work="$(mktemp -d)"
SNAPSHOT_ID=""
SNAPSHOT_FILE=""

# snapshot_call ROUTE_ARGS...: a snapshot call to this VM's snapshot route,
# the answer in WORK/answer.json.
snapshot_call() {
  k8sapi_call snapshot etcd_snapshot "$work" "$work/answer.json" "$@"
}

# snapshot_report FILE: FILE's report of the snapshot handed out.
snapshot_report() {
  snapshot_call -X POST -H 'Content-Type: application/json' --data-binary "@$1"
}

# snapshot_exit STATUS: the EXIT trap. A snapshot handed out and not
# reported is reported failed, with the step and the command that failed.
snapshot_exit() {
  trap - EXIT
  if (($1 != 0)) && [[ -n "$SNAPSHOT_ID" ]]; then
    if ! jq -n --argjson id "$SNAPSHOT_ID" \
      --arg error "$(printf 'step "%s" failed (exit %d): %.200s' "$PROGRESS_STEP" "$1" "${PROGRESS_FAILED_COMMAND:-}")" \
      '{id: $id, error: $error}' >"$work/failure.json" || ! snapshot_report "$work/failure.json"; then
      log "could not report the failure of snapshot ${SNAPSHOT_ID}"
    fi
  fi
  rm -rf "$work" ${SNAPSHOT_FILE:+"$SNAPSHOT_FILE" "$SNAPSHOT_FILE.part"} || true
  exit "$1"
}
set -o errtrace
trap 'PROGRESS_FAILED_COMMAND=$BASH_COMMAND' ERR
trap 'snapshot_exit $?' EXIT

step "fetching this VM's credentials from IMDS"
vm_proofs "$work"

step "asking k8sapi for a snapshot to take"
snapshot_call
if [[ ! -s "$work/answer.json" ]]; then
  log "no snapshot for this node to take"
  exit 0
fi
SNAPSHOT_ID="$(jq -er '.id' "$work/answer.json")"
[[ "$SNAPSHOT_ID" =~ ^[1-9][0-9]*$ ]] || die "k8sapi answered no usable snapshot id"
# The URL, as curl's config (-K): never an argument anyone can list.
jq -er '"url = \"\(.upload_url)\""' "$work/answer.json" >"$work/upload.curl"
log "taking snapshot ${SNAPSHOT_ID} for $(jq -r '.object_key' "$work/answer.json")"

step "saving a snapshot of the local etcd member"
mkdir -p "$SNAPSHOT_DIR"
SNAPSHOT_FILE="${SNAPSHOT_DIR}/snapshot-${SNAPSHOT_ID}.db"
ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINT" --cacert="$ETCD_CACERT" --cert="$ETCD_CERT" --key="$ETCD_KEY" \
  snapshot save "$SNAPSHOT_FILE" >&2
size="$(stat -c %s "$SNAPSHOT_FILE")"
sha256="$(sha256sum "$SNAPSHOT_FILE" | cut -d ' ' -f 1)"
log "saved ${size} bytes, sha256 ${sha256}"

step "uploading the snapshot"
call upload "$work/upload.out" "@$work/upload.curl" --proto "$K8SAPI_PROTO" -T "$SNAPSHOT_FILE"

step "reporting the upload to k8sapi"
jq -n --argjson id "$SNAPSHOT_ID" --argjson size "$size" --arg sha256 "$sha256" \
  '{id: $id, size_bytes: $size, sha256: $sha256}' >"$work/report.json"
snapshot_report "$work/report.json"
SNAPSHOT_ID=""
log "snapshot uploaded and recorded: $(jq -r '"\(.object_key), \(.size_bytes) bytes, \(.state)"' "$work/answer.json")"
