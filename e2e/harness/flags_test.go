package harness

import (
	"reflect"
	"strings"
	"testing"
)

const etcdUnit = `[Unit]
Description=etcd
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-/etc/exk8s/config/cluster.env
Environment="ETCD_UNSUPPORTED_ARCH=" GOMAXPROCS=2
ExecStart=/usr/local/bin/etcd \
  --name=cp-1.cluster-42.internal \
  --data-dir=/var/lib/etcd \
  --listen-client-urls=https://10.0.0.11:2379,https://127.0.0.1:2379 \
  --initial-cluster=cp-1.cluster-42.internal=https://10.0.0.11:2380,cp-2.cluster-42.internal=https://10.0.0.12:2380 \
  --initial-cluster-token "exk8s 42" \
  --trusted-ca-file=/etc/exk8s/pki/etcd-ca.pem \
  --cert-file=/etc/exk8s/pki/etcd-peer.pem \
  --key-file=/etc/exk8s/pki/etcd-peer-key.pem
Restart=always

[Install]
WantedBy=multi-user.target
`

func TestParseUnit(t *testing.T) {
	cmd, err := ParseUnit(etcdUnit)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/usr/local/bin/etcd",
		"--name=cp-1.cluster-42.internal",
		"--data-dir=/var/lib/etcd",
		"--listen-client-urls=https://10.0.0.11:2379,https://127.0.0.1:2379",
		"--initial-cluster=cp-1.cluster-42.internal=https://10.0.0.11:2380,cp-2.cluster-42.internal=https://10.0.0.12:2380",
		"--initial-cluster-token", "exk8s 42",
		"--trusted-ca-file=/etc/exk8s/pki/etcd-ca.pem",
		"--cert-file=/etc/exk8s/pki/etcd-peer.pem",
		"--key-file=/etc/exk8s/pki/etcd-peer-key.pem",
	}
	if !reflect.DeepEqual(cmd.Argv, want) {
		t.Errorf("argv:\n got %q\nwant %q", cmd.Argv, want)
	}
	if got := cmd.Env; !reflect.DeepEqual(got, []string{"ETCD_UNSUPPORTED_ARCH=", "GOMAXPROCS=2"}) {
		t.Errorf("env = %q", got)
	}
	if got := cmd.EnvFiles; !reflect.DeepEqual(got, []string{"-/etc/exk8s/config/cluster.env"}) {
		t.Errorf("env files = %q", got)
	}
	if cmd.Program() != "etcd" {
		t.Errorf("program = %q", cmd.Program())
	}
	if v, ok := cmd.Flag("initial-cluster-token"); !ok || v != "exk8s 42" {
		t.Errorf("Flag(initial-cluster-token) = %q, %v", v, ok)
	}
	if v, ok := cmd.Flag("name"); !ok || v != "cp-1.cluster-42.internal" {
		t.Errorf("Flag(name) = %q, %v", v, ok)
	}
	if _, ok := cmd.Flag("nope"); ok {
		t.Error("Flag(nope) found")
	}
}

func TestParseUnitErrors(t *testing.T) {
	for name, unit := range map[string]string{
		"no exec":       "[Service]\nType=notify\n",
		"exec in unit":  "[Unit]\nExecStart=/bin/true\n",
		"two exec":      "[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n",
		"open quote":    "[Service]\nExecStart=/bin/a \"b\n",
		"not key=value": "[Service]\nExecStart\n",
	} {
		if _, err := ParseUnit(unit); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseUnitPrefixAndComments(t *testing.T) {
	cmd, err := ParseUnit("[Service]\n# comment \\\nExecStart=-/usr/bin/etcd --a='x y' \\\n; inside\n    --b=\\\"q\\\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/etcd", "--a=x y", `--b="q"`}
	if !reflect.DeepEqual(cmd.Argv, want) {
		t.Errorf("got %q want %q", cmd.Argv, want)
	}
}

func TestParseUnitExecStartPre(t *testing.T) {
	cmd, err := ParseUnit("[Service]\nExecStartPre=/usr/local/bin/a install\nExecStartPre=-/bin/b\nExecStart=/usr/bin/etcd\n")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"/usr/local/bin/a", "install"}, {"/bin/b"}}
	if !reflect.DeepEqual(cmd.Pre, want) {
		t.Errorf("got %q want %q", cmd.Pre, want)
	}
	if _, err := ParseUnit("[Service]\nExecStartPre=\nExecStart=/usr/bin/etcd\n"); err == nil {
		t.Error("an empty ExecStartPre parsed")
	}
}

func TestExpandEnv(t *testing.T) {
	env, err := ParseEnvFile("# cluster\nexport NODE_NAME=cp-1\nNODE_IP=\"10.0.1.2\"\nFLAGS='--a=1 --b=2'\n\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExpandEnv([]string{"etcd", "--name=${NODE_NAME}", "--url=https://${NODE_IP}:2380", "$FLAGS", "$$x"}, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd", "--name=cp-1", "--url=https://10.0.1.2:2380", "--a=1", "--b=2", "$$x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q want %q", got, want)
	}
	if _, err := ExpandEnv([]string{"--x=${NOPE}", "$ALSO"}, env); err == nil || !strings.Contains(err.Error(), "ALSO, NOPE") {
		t.Errorf("err = %v", err)
	}
}

const apiserverPod = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.35.4
    command:
    - kube-apiserver
    - --advertise-address=10.0.1.2
    - --etcd-servers=https://10.0.1.2:2379,https://10.0.1.3:2379
    - --etcd-prefix=/registry
    - --service-account-issuer=https://exk8s-7-2a.k8s.excloud.co.in:6443
    - --client-ca-file=/etc/kubernetes/pki/ca.pem
    - --tls-cert-file=/etc/exk8s/pki/apiserver.pem
    - --service-account-key-file=/etc/exk8s/pki/sa.pub,/etc/exk8s/pki/sa-old.pub
    args:
    - --v=2
    env:
    - name: GOMAXPROCS
      value: "2"
    volumeMounts:
    - name: pki
      mountPath: /etc/kubernetes/pki
      readOnly: true
    - name: exk8s
      mountPath: /etc/exk8s
      readOnly: true
  volumes:
  - name: pki
    hostPath:
      path: /etc/exk8s/pki
      type: Directory
  - name: exk8s
    hostPath:
      path: /etc/exk8s
`

func TestParsePodManifestAndReroot(t *testing.T) {
	cmd, err := ParsePodManifest(apiserverPod)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Program() != "kube-apiserver" || len(cmd.Argv) != 9 {
		t.Fatalf("argv = %q", cmd.Argv)
	}
	if !reflect.DeepEqual(cmd.Env, []string{"GOMAXPROCS=2"}) {
		t.Errorf("env = %q", cmd.Env)
	}
	got := cmd.Reroot("/n1")
	want := []string{
		"kube-apiserver",
		"--advertise-address=10.0.1.2",
		"--etcd-servers=https://10.0.1.2:2379,https://10.0.1.3:2379",
		"--etcd-prefix=/registry",
		"--service-account-issuer=https://exk8s-7-2a.k8s.excloud.co.in:6443",
		"--client-ca-file=/n1/etc/exk8s/pki/ca.pem", // through the pki mount
		"--tls-cert-file=/n1/etc/exk8s/pki/apiserver.pem",
		"--service-account-key-file=/n1/etc/exk8s/pki/sa.pub,/n1/etc/exk8s/pki/sa-old.pub",
		"--v=2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reroot:\n got %q\nwant %q", got, want)
	}
}

func TestRerootUnit(t *testing.T) {
	cmd, err := ParseUnit(etcdUnit)
	if err != nil {
		t.Fatal(err)
	}
	got := cmd.Reroot("/r/n2")
	for i, a := range got {
		if i > 0 && cmd.Argv[i] != a && !strings.Contains(a, "/r/n2/") {
			t.Errorf("changed without re-rooting: %q -> %q", cmd.Argv[i], a)
		}
	}
	if got[2] != "--data-dir=/r/n2/var/lib/etcd" || got[8] != "--cert-file=/r/n2/etc/exk8s/pki/etcd-peer.pem" {
		t.Errorf("got %q", got)
	}
	if got[4] != cmd.Argv[4] {
		t.Errorf("initial-cluster changed: %q", got[4])
	}
	if env := cmd.RerootEnv("/r", []string{"A=/etc/x", "B=https://h/etc"}); !reflect.DeepEqual(env, []string{"A=/r/etc/x", "B=https://h/etc"}) {
		t.Errorf("env = %q", env)
	}
}

func TestParsePodManifestErrors(t *testing.T) {
	for name, m := range map[string]string{
		"not yaml":      "{",
		"unknown field": "apiVersion: v1\nkind: Pod\nspec:\n  nope: 1\n",
		"not a pod":     "apiVersion: v1\nkind: Service\n",
		"no containers": "apiVersion: v1\nkind: Pod\nspec: {}\n",
		"no command":    "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n",
	} {
		if _, err := ParsePodManifest(m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestIsHostPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/etc/exk8s/pki/ca.pem": true, "/var/lib/etcd": true, "/registry": false,
		"etc/x": false, "https://x/etc": false, "/": false, "/etc": true,
	} {
		if IsHostPath(p) != want {
			t.Errorf("IsHostPath(%q) = %v", p, !want)
		}
	}
}
