#!/usr/bin/env bash
# exk8s-bootstrap-worker.sh: turns a host that holds its worker bundle and
# the prerequisites into a worker node of its pool. Its keys are born here
# and never leave it: it makes the kubelet's client and serving keys, sends
# a certificate request for each to k8sapi with this VM's proofs (k8sapi
# signs only the names and addresses it recorded for this VM, once per
# bootstrap window), checks that what comes back chains to the cluster CA
# and is for its own keys, writes the kubelet's kubeconfig over its own
# key, and starts containerd and the kubelet with its pool's labels and
# taints (kubelet.service). It reports kubelet_started and, once its Node
# is Ready, ready to the worker's status route, then starts the daily
# renewal of its certificates (exk8s-renew-certificates.timer); a failed
# step is reported with the tail of its log (exk8s-progress.sh). k8sapi
# records bundle_fetched and certificates_signed itself. EXK8S_ROOT
# prefixes every path it writes (tests); EXK8S_SKIP_HOST_SETUP=1 stops once
# the kubeconfig is written.
set -euo pipefail

# shellcheck source=/dev/null
. "${EXK8S_ROOT:-}/usr/local/bin/exk8s-progress.sh"
progress_begin exk8s-bootstrap-worker exk8s-bootstrap

# This node's facts, as k8sapi recorded them from the compute API.
CLUSTER_NAME='exk8s-7-2a'
NODE_NAME='web-4.cluster-42.internal'
NODE_IPV4='10.0.0.14'
NODE_IPV6='fd00::14'
APISERVER_ENDPOINT='https://exk8s-7-2a.k8s.excloud.co.in:6443'
CNI='cilium'
CA_CERT="${ROOT}"'/etc/exk8s/pki/ca.pem'
CLIENT_CERT="${ROOT}"'/etc/exk8s/pki/kubelet-client.pem'
CLIENT_KEY="${ROOT}"'/etc/exk8s/pki/kubelet-client-key.pem'
SERVING_CERT="${ROOT}"'/etc/exk8s/pki/kubelet.pem'
SERVING_KEY="${ROOT}"'/etc/exk8s/pki/kubelet-key.pem'
KUBELET_KUBECONFIG="${ROOT}"'/etc/exk8s/kubeconfig/kubelet.kubeconfig'
KUBELET_DROPIN_DIR="${ROOT}"'/etc/kubernetes/kubelet.conf.d'
NODE_USER="system:node:${NODE_NAME}"

work="$(mktemp -d)"
remove_at_exit "$work"

# make_key PATH: a new P-256 key at PATH, owner-only, unless one is there:
# a run again keeps the keys its certificates were signed for.
make_key() {
  [[ -s "$1" ]] || write_file "$1" 0600 openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256
}

# serving_sans: the serving request's names: this node's name and addresses.
serving_sans() {
  printf 'DNS:%s,IP:%s' "$NODE_NAME" "$NODE_IPV4"
  [[ -z "$NODE_IPV6" ]] || printf ',IP:%s' "$NODE_IPV6"
}

# request KEY [SANS]: a PEM certificate request over KEY for this node's
# kubelet, with SANS (openssl's subjectAltName syntax) if given.
request() {
  local -a sans=()
  [[ -z "${2:-}" ]] || sans=(-addext "subjectAltName=$2")
  openssl req -new -key "$1" -subj "/O=system:nodes/CN=${NODE_USER}" "${sans[@]}"
}

# sign_requests: k8sapi's certificates for this node's two requests, in
# $work/certificates.json. A certificate call, as a renewal: k8sapi opens
# the cluster CA (KMS) and signs in one call.
sign_requests() {
  request "$CLIENT_KEY" >"$work/client.csr"
  request "$SERVING_KEY" "$(serving_sans)" >"$work/serving.csr"
  jq -n --rawfile client "$work/client.csr" --rawfile serving "$work/serving.csr" \
    '{kubelet_client_csr: $client, kubelet_serving_csr: $serving}' >"$work/csrs.json"
  vm_proofs "$work" || die "cannot read this VM's credentials from IMDS"
  k8sapi_call renew worker_csr "$work" "$work/certificates.json" -X POST -H 'Content-Type: application/json' \
    --data-binary "@$work/csrs.json"
}

# install_cert FIELD KEY DEST: the answer's FIELD at DEST, once it is a
# certificate of the cluster CA for KEY.
install_cert() {
  jq -j --arg f "$1" '.[$f] // error("no \($f) in the answer")' "$work/certificates.json" >"$work/$1.pem"
  signed_for "$CA_CERT" "$2" "$work/$1.pem" || die "k8sapi's ${1} is not the cluster CA's certificate for this node's key"
  write_file "$3" 0644 cat "$work/$1.pem"
}

# kubeconfig: the kubelet's kubeconfig, over the files of its own key and
# certificate (the renewal replaces them in place).
kubeconfig() {
  cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: ${CLUSTER_NAME}
  cluster:
    server: ${APISERVER_ENDPOINT}
    certificate-authority: ${CA_CERT#"$ROOT"}
users:
- name: ${NODE_USER}
  user:
    client-certificate: ${CLIENT_CERT#"$ROOT"}
    client-key: ${CLIENT_KEY#"$ROOT"}
contexts:
- name: ${NODE_USER}@${CLUSTER_NAME}
  context:
    cluster: ${CLUSTER_NAME}
    user: ${NODE_USER}
current-context: ${NODE_USER}@${CLUSTER_NAME}
KUBECONFIG
}

# node_ready: the API server says this node is Ready (the kubelet's own
# identity may read its Node).
node_ready() {
  [[ "$(kubectl --kubeconfig "$KUBELET_KUBECONFIG" get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

step "making the kubelet's client and serving keys"
make_key "$CLIENT_KEY"
make_key "$SERVING_KEY"

if [[ -s "$CLIENT_CERT" && -s "$SERVING_CERT" ]] && signed_for "$CA_CERT" "$CLIENT_KEY" "$CLIENT_CERT" &&
  signed_for "$CA_CERT" "$SERVING_KEY" "$SERVING_CERT"; then
  log "the kubelet's certificates are already signed for its keys"
else
  step "asking k8sapi to sign the kubelet's certificate requests"
  sign_requests
  install_cert kubelet_client_cert "$CLIENT_KEY" "$CLIENT_CERT"
  install_cert kubelet_serving_cert "$SERVING_KEY" "$SERVING_CERT"
fi

step "writing the kubelet's kubeconfig"
write_file "$KUBELET_KUBECONFIG" 0600 kubeconfig

if [[ "${EXK8S_SKIP_HOST_SETUP:-0}" == "1" ]]; then
  log "EXK8S_SKIP_HOST_SETUP=1: keys and certificates written, not starting the kubelet"
  exit 0
fi

for bin in containerd kubelet kubectl; do
  command -v "$bin" >/dev/null 2>&1 || die "missing required binary: ${bin} (run exk8s-install-prereqs.sh)"
done
mkdir -p /var/lib/kubelet /var/log/exk8s "$KUBELET_DROPIN_DIR"

step "configuring the kubelet's resolv.conf"
configure_kubelet_resolv_conf "$KUBELET_DROPIN_DIR"

step "starting containerd"
systemctl daemon-reload
start_unit containerd

# The IMDS guard and the pod network, before the kubelet starts any pod.
start_pod_network "$CNI"

step "starting the kubelet"
systemctl enable kubelet
systemctl restart kubelet
log "started the kubelet on ${NODE_NAME}"
progress_report kubelet_started

# Started now, stopped at power-off: a removed worker drains itself and
# deletes its Node before its VM goes (exk8s-drain-node.sh). The undo
# runs at every start: a worker that stays uncordons what a cut-off drain
# left cordoned (nothing now: no drain ran yet).
step "arming the drain at power-off"
start_unit exk8s-drain.service exk8s-drain-undo.service

# Ready closes this worker's bootstrap window, as a control-plane node's.
step "waiting for ${NODE_NAME} to be Ready"
retry 600 1 node_ready || die "${NODE_NAME} is not Ready after 10 minutes"
progress_report ready "its Node is Ready"

# Ready: the kubelet's certificates are renewed daily from now on, over
# the keys made here (exk8s-renew-certificates.sh).
step "starting the daily certificate renewal"
start_unit exk8s-renew-certificates.timer
step "starting the health reports"
# Every 30 s from now on (exk8s-health-report.sh), as a control-plane node.
start_unit exk8s-health-report.timer
