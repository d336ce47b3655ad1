#!/usr/bin/env bash
# exk8s-renew-control-plane-certificates.sh, installed on a control-plane
# node as exk8s-renew-certificates.sh: renews the node's certificates, run
# daily by exk8s-renew-certificates.timer once the node is ready. It
# proves it holds each of its keys: one certificate request per identity,
# signed with the key the node already has, sent to k8sapi
# (POST /bootstrap/control-plane/{vm_id}/renew, the bundle's proofs).
# k8sapi re-issues the certificates that are due over the same keys and
# answers certificates only: no key ever travels. Nothing due: nothing
# changes. Due (or renewed by an earlier run that did not finish): every
# certificate that differs is written atomically, into its PEM file and the
# kubeconfig that embeds it, and exactly the components that read a changed
# one restart. On failure it reports failed with the step and the tail of
# its log (exk8s-progress.sh); the node keeps running on the certificates
# it has. EXK8S_ROOT prefixes every path (tests); EXK8S_SKIP_HOST_SETUP=1
# writes the files but restarts nothing.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
progress_begin exk8s-renew-certificates exk8s-renew
work="$(mktemp -d)"
remove_at_exit "$work"

# The identities this node renews: name, key file, certificate file, the
# kubeconfig that embeds it ("-": none), the component that reads it.
IDENTITIES=(
  'etcd-peer /etc/exk8s/pki/etcd-peer-key.pem /etc/exk8s/pki/etcd-peer.pem - etcd'
  'apiserver /etc/exk8s/pki/apiserver-key.pem /etc/exk8s/pki/apiserver.pem - kube-apiserver'
  'apiserver-etcd-client /etc/exk8s/pki/apiserver-etcd-client-key.pem /etc/exk8s/pki/apiserver-etcd-client.pem - kube-apiserver'
  'apiserver-kubelet-client /etc/exk8s/pki/apiserver-kubelet-client-key.pem /etc/exk8s/pki/apiserver-kubelet-client.pem - kube-apiserver'
  'front-proxy-client /etc/exk8s/pki/front-proxy-client-key.pem /etc/exk8s/pki/front-proxy-client.pem - kube-apiserver'
  'controller-manager /etc/exk8s/pki/controller-manager-key.pem /etc/exk8s/pki/controller-manager.pem /etc/exk8s/kubeconfig/controller-manager.kubeconfig kube-controller-manager'
  'scheduler /etc/exk8s/pki/scheduler-key.pem /etc/exk8s/pki/scheduler.pem /etc/exk8s/kubeconfig/scheduler.kubeconfig kube-scheduler'
  'kubelet-client /etc/exk8s/pki/kubelet-client-key.pem /etc/exk8s/pki/kubelet-client.pem /etc/exk8s/kubeconfig/kubelet.kubeconfig kubelet'
  'kubelet /etc/exk8s/pki/kubelet-key.pem /etc/exk8s/pki/kubelet.pem - kubelet'
  'control-plane-taint /etc/exk8s/pki/control-plane-taint-key.pem /etc/exk8s/pki/control-plane-taint.pem /etc/exk8s/kubeconfig/control-plane-taint.kubeconfig exk8s-control-plane-taint'
  'addons /etc/exk8s/pki/addons-key.pem /etc/exk8s/pki/addons.pem /etc/exk8s/kubeconfig/addons.kubeconfig exk8s-upgrade-addons.timer'
)

step "fetching this VM's credentials from IMDS"
vm_proofs "$work"

# The trust files a CA rotation rewrites: path, mode, the components that
# read it.
TRUST=(
  '/etc/exk8s/pki/ca.pem 0644 kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,exk8s-control-plane-taint'
  '/etc/exk8s/pki/etcd-ca.pem 0644 kube-apiserver,etcd'
  '/etc/exk8s/pki/etcd-crl.pem 0644 etcd'
  '/etc/exk8s/pki/front-proxy-ca.pem 0644 kube-apiserver,kube-controller-manager'
  '/etc/exk8s/pki/service-account.pem 0644 kube-apiserver'
  '/etc/exk8s/pki/service-account-key.pem 0600 kube-apiserver,kube-controller-manager'
)

ask_renewal "$work" renew key "${IDENTITIES[@]}"

# served NAME FILE: writes the answered certificate of NAME to FILE.
served() {
  jq -j --arg n "$1" '.certificates[$n] // error("no certificate for \($n)")' "$work/renewal.json" >"$2"
}

# with_cert KUBECONFIG CERT_FILE: the kubeconfig, its client certificate
# replaced (its key stays as it is).
with_cert() {
  local b64
  b64="$(base64 -w0 <"$2")"
  sed "s|^\( *client-certificate-data:\).*|\1 ${b64}|" "${ROOT}$1"
}

# Components a run wrote new certificates for but did not get to restart
# (it died in between): restarted by this run whatever it finds due.
PENDING="${ROOT}/etc/exk8s/renewal-restarts-pending"
components=()
if [[ -s "$PENDING" ]]; then
  read -r -a components <"$PENDING"
  log "an earlier renewal left restarts pending: ${components[*]}"
fi

step "writing the renewed certificates"
changed=()
for entry in "${IDENTITIES[@]}"; do
  read -r name _ cert kubeconfig component <<<"$entry"
  served "$name" "$work/${name}.pem"
  cmp -s "$work/${name}.pem" "${ROOT}${cert}" && continue
  write_file "${ROOT}${cert}" 0644 cat "$work/${name}.pem"
  if [[ "$kubeconfig" != "-" ]]; then
    with_cert "$kubeconfig" "$work/${name}.pem" >"$work/${name}.kubeconfig"
    grep -q "client-certificate-data: $(base64 -w0 <"$work/${name}.pem")" "$work/${name}.kubeconfig" ||
      die "${kubeconfig} has no client certificate to replace"
    write_file "${ROOT}${kubeconfig}" 0600 cat "$work/${name}.kubeconfig"
  fi
  changed+=("$name")
  [[ " ${components[*]} " == *" ${component} "* ]] || components+=("$component")
  printf '%s\n' "${components[*]}" >"$PENDING"
done

step "writing the trust files a CA rotation changed"
apply_trust "$work" '/etc/exk8s/pki/ca.pem' "${TRUST[@]}"
changed+=("${TRUST_CHANGED[@]}")
for component in "${TRUST_READERS[@]}"; do
  [[ " ${components[*]} " == *" ${component} "* ]] || components+=("$component")
done
if ((${#TRUST_CHANGED[@]} > 0)); then
  printf '%s\n' "${components[*]}" >"$PENDING"
fi
if ((${#components[@]} == 0)); then
  log "no certificate is due; nothing changed"
  exit 0
fi
log "changed: ${changed[*]:-nothing}; restarting: ${components[*]}"

# restart COMPONENT: systemd units restart; a static pod's container is
# stopped and the kubelet starts a new one, which reads the files written
# here.
restart() {
  case "$1" in
    etcd | kubelet | 'exk8s-control-plane-taint' | 'exk8s-upgrade-addons.timer') systemctl restart "$1" ;;
    *)
      local id
      for id in $(ctr -n k8s.io containers list -q "labels.\"io.kubernetes.container.name\"==$1"); do
        ctr -n k8s.io tasks kill --signal SIGTERM "$id" 2>/dev/null || true
      done
      ;;
  esac
}

for c in 'kube-apiserver' 'kube-controller-manager' 'kube-scheduler' 'etcd' 'kubelet' 'exk8s-control-plane-taint' 'exk8s-upgrade-addons.timer'; do
  [[ " ${components[*]} " == *" ${c} "* ]] || continue
  step "restarting ${c}"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
    log "EXK8S_SKIP_HOST_SETUP=1: not restarting ${c}"
  else
    restart "$c"
  fi
done
rm -f "$PENDING"
progress_report ready "certificates renewed (${changed[*]:-none}); restarted: ${components[*]}"
