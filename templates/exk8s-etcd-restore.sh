#!/usr/bin/env bash
# exk8s-etcd-restore.sh: starts this node's etcd member from the snapshot
# its cluster was restored from (docs/ETCD-SNAPSHOTS.md, "Restore"), run by
# the bootstrap script before etcd first starts, on each founding node of
# a restored cluster. A data directory that holds a member already (a
# reboot, a re-opened bootstrap) is left alone: a node never restores
# twice. Else it asks k8sapi (GET /bootstrap/control-plane/{vm_id}/etcd-restore,
# the bundle's proofs) for a presigned URL of the snapshot and its size and
# SHA-256, downloads it beside the data directory, checks both, restores
# it with etcdutl as a member of this cluster (its name, initial cluster
# and token are etcd.service's) into a scratch directory, and only then
# moves the member into place: a failure leaves no half-restored member
# for etcd to start from. The URL never shows on a command line (curl
# reads it from a file).
# EXK8S_ROOT prefixes every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-etcd-restore
DATA_DIR="${ROOT}"{{ shq .EtcdRestore.DataDir }}
SELF_NAME={{ shq .Node.Name }}
SELF_PEER_URL={{ shq .EtcdRestore.PeerURL }}
INITIAL_CLUSTER={{ shq .EtcdInitialCluster }}
CLUSTER_TOKEN={{ shq .EtcdClusterToken }}

if [[ -e "${DATA_DIR}/member" ]]; then
  log "${DATA_DIR} holds an etcd member already: nothing to restore"
  exit 0
fi
command -v etcdutl >/dev/null 2>&1 || die "missing required binary: etcdutl (run exk8s-install-prereqs.sh)"

# Beside the data directory, on its disk: the snapshot may be gigabytes,
# and the member is moved into place by a rename.
mkdir -p "$DATA_DIR"
work="$(mktemp -d "${DATA_DIR}.restore.XXXXXX")"
trap 'rm -rf "$work"' EXIT

vm_proofs "$work" || die "could not fetch this VM's credentials from IMDS"
k8sapi_call snapshot etcd_restore "$work" "$work/answer.json" || die "k8sapi answered no snapshot to restore"
size="$(jq -er '.size_bytes' "$work/answer.json")" || die "k8sapi answered no snapshot size"
sha256="$(jq -er '.sha256' "$work/answer.json")" || die "k8sapi answered no snapshot SHA-256"
# The URL, as curl's config (-K): never an argument anyone can list.
jq -er '"url = \"\(.url)\""' "$work/answer.json" >"$work/download.curl" || die "k8sapi answered no download URL"

log "downloading the snapshot (${size} bytes)"
call download "$work/snapshot.db" "@$work/download.curl" --proto "$K8SAPI_PROTO" || die "could not download the snapshot"
got_size="$(stat -c %s "$work/snapshot.db")"
[[ "$got_size" == "$size" ]] || die "the snapshot is ${got_size} bytes, not the ${size} recorded: not restoring"
got_sha256="$(sha256sum "$work/snapshot.db" | cut -d ' ' -f 1)"
[[ "$got_sha256" == "$sha256" ]] || die "the snapshot's SHA-256 is ${got_sha256}, not the ${sha256} recorded: not restoring"

log "restoring ${SELF_NAME}'s member from the snapshot"
etcdutl snapshot restore "$work/snapshot.db" --name "$SELF_NAME" --initial-cluster "$INITIAL_CLUSTER" \
  --initial-cluster-token "$CLUSTER_TOKEN" --initial-advertise-peer-urls "$SELF_PEER_URL" \
  --data-dir "$work/data" >&2 || die "etcdutl could not restore the snapshot"
chmod 0700 "$work/data/member" "$DATA_DIR"
mv "$work/data/member" "${DATA_DIR}/member"
log "restored ${SELF_NAME}'s etcd member into ${DATA_DIR}"
