#!/usr/bin/env bash
# exk8s-renew-worker-certificates.sh, installed on a worker as
# exk8s-renew-certificates.sh: renews the kubelet's client and
# serving certificates, run daily by exk8s-renew-certificates.timer once
# the worker's Node is Ready. k8sapi keeps no copy of a worker's
# certificates, so for each identity the worker sends the certificate it
# holds and a certificate request signed with that certificate's key (the
# control plane's proof of possession), to
# POST /bootstrap/worker/{vm_id}/renew with the VM's proofs. k8sapi
# re-issues the due ones over the same keys, for the names it recorded;
# no key ever travels. An answer is installed only if it chains to the
# cluster CA and is for this worker's key; then the kubelet restarts (its
# client certificate it would reload by itself, its serving certificate
# only at start). Nothing due: nothing changes. On failure it reports
# failed with the step and the tail of its log (exk8s-progress.sh); the
# kubelet keeps the certificates it has. EXK8S_ROOT prefixes every path
# (tests); EXK8S_SKIP_HOST_SETUP=1 writes the files but restarts nothing.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
progress_begin exk8s-renew-certificates exk8s-renew
work="$(mktemp -d)"
remove_at_exit "$work"

CA_CERT="${ROOT}"'/etc/exk8s/pki/ca.pem'
# The identities a worker renews: name, key file, certificate file.
IDENTITIES=(
  'kubelet-client /etc/exk8s/pki/kubelet-client-key.pem /etc/exk8s/pki/kubelet-client.pem'
  'kubelet /etc/exk8s/pki/kubelet-key.pem /etc/exk8s/pki/kubelet.pem'
)
# A run that wrote certificates but died before the kubelet restarted
# leaves this; the next run restarts it whatever it finds due.
PENDING="${ROOT}/etc/exk8s/renewal-restarts-pending"

step "fetching this VM's credentials from IMDS"
vm_proofs "$work"

# The trust files a CA rotation rewrites: path, mode, who reads it.
TRUST=(
  '/etc/exk8s/pki/ca.pem 0644 kubelet'
)

ask_renewal "$work" worker_renew certificate "${IDENTITIES[@]}"
# During a CA rotation the certificates are checked against the cluster
# CA's bundle answered with them (from signing on, the new CA's).
if answered_trust "$work" '/etc/exk8s/pki/ca.pem' "$work/ca.pem"; then
  CA_CERT="$work/ca.pem"
fi

# Every answer is checked before any is written: a worker never holds a
# certificate k8sapi's CA did not sign for its key.
step "checking the answered certificates"
changed=()
for entry in "${IDENTITIES[@]}"; do
  read -r name key cert <<<"$entry"
  jq -j --arg n "$name" '.certificates[$n] // error("no certificate for \($n)")' "$work/renewal.json" >"$work/${name}.pem"
  cmp -s "$work/${name}.pem" "${ROOT}${cert}" && continue
  signed_for "$CA_CERT" "${ROOT}${key}" "$work/${name}.pem" ||
    die "k8sapi's ${name} certificate is not the cluster CA's for this worker's key"
  changed+=("$name")
done
if ((${#changed[@]} > 0)); then
  step "writing the renewed certificates"
  write_file "$PENDING" 0644 echo kubelet
  for entry in "${IDENTITIES[@]}"; do
    read -r name _ cert <<<"$entry"
    cmp -s "$work/${name}.pem" "${ROOT}${cert}" || write_file "${ROOT}${cert}" 0644 cat "$work/${name}.pem"
  done
fi
step "writing the trust files a CA rotation changed"
apply_trust "$work" '/etc/exk8s/pki/ca.pem' "${TRUST[@]}"
if ((${#TRUST_CHANGED[@]} > 0)); then
  changed+=("${TRUST_CHANGED[@]}")
  write_file "$PENDING" 0644 echo kubelet
fi
if [[ ! -s "$PENDING" ]]; then
  log "no certificate is due; nothing changed"
  exit 0
fi
log "changed: ${changed[*]:-none, restarting as an earlier run left pending}"

step "restarting the kubelet"
if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
  log "EXK8S_SKIP_HOST_SETUP=1: not restarting the kubelet"
else
  systemctl restart kubelet
fi
rm -f "$PENDING"
progress_report ready "certificates renewed (${changed[*]:-none}); restarted: kubelet"
