#!/usr/bin/env bash
# exk8s-renew-certificates.sh: renews this node's certificates, run daily by
# exk8s-renew-certificates.timer once the node is ready. It asks k8sapi
# (POST /bootstrap/control-plane/{vm_id}/renew, the bundle's proofs), which
# re-issues the node's stored serving certificates once they are due and
# serves them byte for byte until then. Nothing due: nothing changes. Due
# (or renewed by an earlier run that did not finish): every credential that
# differs is written atomically with its mode, and exactly the components
# that read a changed file restart. On failure it reports failed with the
# step and the tail of its log (exk8s-progress.sh); the node keeps running
# on the certificates it has. EXK8S_ROOT prefixes every path (tests);
# EXK8S_SKIP_HOST_SETUP=1 writes the files but restarts nothing.
set -euo pipefail

ROOT="${EXK8S_ROOT:-}"
# shellcheck source=/dev/null
. "${ROOT}/usr/local/bin/exk8s-progress.sh"
progress_begin exk8s-renew-certificates
work="$(mktemp -d)"
trap 'rm -rf "$work"; progress_exit $?' EXIT

log() { printf '%s exk8s-renew: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }

# The stored identities' certificates: they change only when renewed.
STORED=('/etc/exk8s/pki/etcd-peer.pem' '/etc/exk8s/pki/apiserver.pem' )

# reader_of PATH: the component that reads PATH ("" for none).
reader_of() {
  case "$1" in
    '/etc/exk8s/pki/etcd-peer.pem') echo 'etcd' ;;
    '/etc/exk8s/pki/etcd-peer-key.pem') echo 'etcd' ;;
    '/etc/exk8s/pki/apiserver.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/apiserver-key.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/apiserver-etcd-client.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/apiserver-etcd-client-key.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/apiserver-kubelet-client.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/apiserver-kubelet-client-key.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/front-proxy-client.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/front-proxy-client-key.pem') echo 'kube-apiserver' ;;
    '/etc/exk8s/pki/kubelet.pem') echo 'kubelet' ;;
    '/etc/exk8s/pki/kubelet-key.pem') echo 'kubelet' ;;
    '/etc/exk8s/kubeconfig/kubelet.kubeconfig') echo 'kubelet' ;;
    '/etc/exk8s/kubeconfig/controller-manager.kubeconfig') echo 'kube-controller-manager' ;;
    '/etc/exk8s/kubeconfig/scheduler.kubeconfig') echo 'kube-scheduler' ;;
    '/etc/exk8s/kubeconfig/kube-proxy.kubeconfig') echo 'kube-proxy' ;;
    *) echo "" ;;
  esac
}

step "fetching this VM's credentials from IMDS"
progress_credentials "$work"

step "asking k8sapi for this node's certificates"
progress_get "$work/renewal.json" "$(cat "$work/base")/bootstrap/control-plane/$(cat "$work/node")/renew" -X POST \
  --proto "$(cat "$work/proto")" --proto-redir "$(cat "$work/proto")" -H "@$work/imds.header" -H "@$work/auth.header"
log "k8sapi renewed: $(jq -r '.renewed | join(", ") | if . == "" then "nothing" else . end' "$work/renewal.json")"

# is_installed PATH: the served content of PATH is what the node has.
is_installed() {
  [[ -f "${ROOT}$1" ]] && jq -e --arg p "$1" --rawfile have "${ROOT}$1" '.files[$p] == $have' "$work/renewal.json" >/dev/null
}

step "comparing the stored certificates"
due=false
for cert in "${STORED[@]}"; do
  is_installed "$cert" || due=true
done
if [[ "$due" == false ]]; then
  log "no certificate is due; nothing changed"
  exit 0
fi

# install PATH: writes PATH's served content beside it, owner-only until
# its mode is set, then renames it into place; prints PATH if it changed.
install_file() {
  local path=$1 mode tmp
  [[ "$path" == /etc/exk8s/* && "$path" != *..* ]] || { log "refusing path ${path}"; return 1; }
  mode="$(jq -r --arg p "$path" '.file_modes[$p]' "$work/renewal.json")"
  [[ "$mode" =~ ^0[0-7]{3}$ ]] || { log "bad mode ${mode} for ${path}"; return 1; }
  is_installed "$path" && return 0
  mkdir -p "$(dirname "${ROOT}${path}")"
  tmp="${ROOT}${path}.exk8s-renew"
  (umask 077 && jq -j --arg p "$path" '.files[$p]' "$work/renewal.json" >"$tmp")
  chmod "$mode" "$tmp"
  mv -f "$tmp" "${ROOT}${path}"
  echo "$path"
}

step "writing the renewed files"
changed=()
while IFS= read -r path; do
  if written="$(install_file "$path")" && [[ -n "$written" ]]; then
    changed+=("$written")
  fi
done < <(jq -r '.files | keys[]' "$work/renewal.json")
# A file that could not be written fails the renewal (install_file's return
# is consumed by the if): check them all again.
for path in $(jq -r '.files | keys[]' "$work/renewal.json"); do
  is_installed "$path" || { log "${path} was not written"; exit 1; }
done

components=()
for path in "${changed[@]}"; do
  c="$(reader_of "$path")"
  [[ -z "$c" || " ${components[*]} " == *" ${c} "* ]] || components+=("$c")
done
log "changed: ${changed[*]}; restarting: ${components[*]:-nothing}"

# restart COMPONENT: systemd units restart; a static pod's container is
# stopped and the kubelet starts it again; kube-proxy's pod on this node is
# deleted and its DaemonSet makes a new one.
restart() {
  case "$1" in
    etcd | kubelet) systemctl restart "$1" ;;
    kube-proxy)
      # shellcheck source=/dev/null
      . /etc/exk8s/config/cluster.env
      # Not fatal: kube-proxy keeps working on its current identity, which
      # its pod's next restart replaces with the one written here.
      kubectl --kubeconfig /etc/exk8s/kubeconfig/admin.kubeconfig -n kube-system delete pod \
        -l k8s-app=kube-proxy --field-selector "spec.nodeName=${NODE_NAME}" --wait=false ||
        log "could not restart kube-proxy; it picks its new identity up when its pod restarts"
      ;;
    *)
      local id
      for id in $(ctr -n k8s.io containers list -q "labels.\"io.kubernetes.container.name\"==$1"); do
        ctr -n k8s.io tasks kill --signal SIGTERM "$id" 2>/dev/null || true
      done
      ;;
  esac
}

for c in "${components[@]}"; do
  step "restarting ${c}"
  if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
    log "EXK8S_SKIP_HOST_SETUP=1: not restarting ${c}"
  else
    restart "$c"
  fi
done
progress_report ready "certificates renewed; restarted: ${components[*]:-nothing}"
