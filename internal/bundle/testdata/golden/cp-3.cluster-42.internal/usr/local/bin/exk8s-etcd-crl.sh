#!/usr/bin/env bash
# exk8s-etcd-crl.sh: keeps the CRL this node's etcd reads at every
# handshake (--client-crl-file, --peer-crl-file) current: it lists the
# serials of every retired node's etcd certificates (docs/REPLACE-NODE.md).
#
#   exk8s-etcd-crl.sh install   etcd's ExecStartPre: the bundle's CRL,
#                               unless the one installed is newer
#   exk8s-etcd-crl.sh fetch     exk8s-etcd-crl.timer, every minute: the
#                               cluster's current CRL from k8sapi
#                               (GET /bootstrap/control-plane/{vm_id}/etcd-crl,
#                               the bundle's proofs), installed if newer
#
# etcd reads DER only, checks neither a CRL's signature nor its dates, and
# refuses every handshake while the file is missing or unreadable: so a CRL
# is installed only once it verifies against the etcd CA and its number is
# higher than the installed one's (a replayed older CRL never takes a
# revocation back), as DER written beside the old file and renamed over it,
# so etcd reads the old one or the new one, never half of one. etcd needs
# no restart: it reads the file at its next handshake. EXK8S_ROOT prefixes
# every path (tests).
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
log_as exk8s-etcd-crl
ETCD_CA="${ROOT}"'/etc/exk8s/pki/etcd-ca.pem'
BUNDLE_CRL="${ROOT}"'/etc/exk8s/pki/etcd-crl.pem'
CRL_DER="${ROOT}"'/var/lib/exk8s/etcd-crl.der'

# crl_number FILE FORM: the number of the CRL in FILE (PEM or DER), in
# decimal; fails for a file that holds no CRL with a number.
crl_number() {
  local out
  out="$(openssl crl -inform "$2" -in "$1" -noout -crlnumber 2>/dev/null)" || return 1
  out="${out#crlNumber=}"
  out="${out#0x}"
  [[ "$out" =~ ^[0-9A-Fa-f]{1,15}$ ]] || return 1
  printf '%d\n' "$((16#$out))"
}

# install_crl PEM: PEM's CRL, as etcd's DER, if it verifies against the
# etcd CA and is newer than the installed one (none, or one that does not
# read: -1).
install_crl() {
  local pem=$1 want have
  want="$(crl_number "$pem" PEM)" || die "${pem} holds no numbered CRL"
  # openssl crl exits 0 on a "verify failure" too (3.0): its word is read.
  [[ "$(openssl crl -in "$pem" -CAfile "$ETCD_CA" -noout 2>&1)" == "verify OK" ]] ||
    die "the CRL in ${pem} is not signed by the etcd CA"
  have="$(crl_number "$CRL_DER" DER)" || have=-1
  if ((want <= have)); then
    return 0
  fi
  write_file "$CRL_DER" 0644 openssl crl -in "$pem" -outform DER || die "cannot write ${CRL_DER}"
  log "installed etcd CRL ${want} over $( ((have < 0)) && echo none || echo "$have"): $(openssl crl -in "$pem" -noout -text | grep -c 'Serial Number:' || true) serials revoked"
}

# fetch_crl: the cluster's current CRL from k8sapi, installed if newer;
# nothing while the cluster has revoked nothing (204).
fetch_crl() {
  local work
  work="$(mktemp -d)"
  remove_at_exit "$work"
  ask_k8sapi etcd_crl "$work" || return 0
  jq -er '.crl' "$work/answer.json" >"$work/crl.pem" || die "k8sapi answered no CRL"
  install_crl "$work/crl.pem"
}

cleanup_at_exit

case "${1:-}" in
  install) install_crl "$BUNDLE_CRL" ;;
  fetch) fetch_crl ;;
  *) die "usage: $0 install|fetch" ;;
esac
