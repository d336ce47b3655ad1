package bundle

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// kubeProxyObjects decodes kube-proxy.yaml strictly, object by object, and
// returns them with their kinds in file order (kubectl applies them so).
type kubeProxyObjects struct {
	kinds   []string
	sa      corev1.ServiceAccount
	binding rbacv1.ClusterRoleBinding
	config  corev1.ConfigMap
	ds      appsv1.DaemonSet
}

func decodeKubeProxy(t *testing.T, manifest string) kubeProxyObjects {
	t.Helper()
	var out kubeProxyObjects
	for i, doc := range strings.Split(manifest, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("kube-proxy.yaml doc %d: %v", i, err)
		}
		out.kinds = append(out.kinds, meta.Kind)
		name := fmt.Sprintf("kube-proxy.yaml doc %d (%s)", i, meta.Kind)
		into := map[string]any{"ServiceAccount": &out.sa, "ClusterRoleBinding": &out.binding,
			"ConfigMap": &out.config, "DaemonSet": &out.ds}[meta.Kind]
		if into == nil {
			t.Fatalf("%s: unexpected kind", name)
		}
		strictYAML(t, name, doc, into)
	}
	return out
}

// kube-proxy runs on every node, a worker's included: it authenticates
// with its pod's service-account token (bound to system:node-proxier),
// reaches the API server by the control plane's name, tolerates every
// taint, and reads nothing of the host's but iptables' lock and modules.
func TestKubeProxyRunsOnEveryNode(t *testing.T) {
	_, bundles := realBundles(t)
	for _, b := range bundles {
		o := decodeKubeProxy(t, mustFile(t, b, addonDir+"/kube-proxy.yaml"))
		if got := strings.Join(o.kinds, ","); got != "ServiceAccount,ClusterRoleBinding,ConfigMap,DaemonSet" {
			t.Errorf("kube-proxy.yaml objects %s: the DaemonSet must come after what its pods need", got)
		}
		checkKubeProxyRBAC(t, o)
		checkKubeProxyKubeconfig(t, o.config.Data["kubeconfig"], "https://"+b.Metadata.ControlPlaneDNSName+":6443")
		checkKubeProxyPod(t, o.ds)
		// Its pods roll when the server changes (a restored cluster's
		// keyspace holds the old cluster's kube-proxy objects).
		if got := o.ds.Spec.Template.Annotations["k8sapi.excloud.in/api-server"]; got != "https://"+b.Metadata.ControlPlaneDNSName+":6443" {
			t.Errorf("the pod template's api-server annotation is %q", got)
		}
	}
}

func checkKubeProxyRBAC(t *testing.T, o kubeProxyObjects) {
	t.Helper()
	if o.sa.Name != "kube-proxy" || o.sa.Namespace != "kube-system" {
		t.Errorf("ServiceAccount %s/%s", o.sa.Namespace, o.sa.Name)
	}
	b := o.binding
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != "system:node-proxier" || len(b.Subjects) != 1 ||
		b.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: o.sa.Name, Namespace: o.sa.Namespace}) {
		t.Errorf("ClusterRoleBinding %s: role %v, subjects %v", b.Name, b.RoleRef, b.Subjects)
	}
	if o.ds.Spec.Template.Spec.ServiceAccountName != o.sa.Name {
		t.Errorf("DaemonSet runs as %q, not the ServiceAccount", o.ds.Spec.Template.Spec.ServiceAccountName)
	}
}

func checkKubeProxyKubeconfig(t *testing.T, kubeconfig, server string) {
	t.Helper()
	// Loaded, not validated: Validate opens the files it names, which are
	// the pod's.
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatalf("kube-proxy's kubeconfig: %v", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kube-proxy's kubeconfig: no current context with a cluster and user: %+v", cfg)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	if cluster.Server != server || cluster.CertificateAuthority != sa+"ca.crt" {
		t.Errorf("kube-proxy's kubeconfig: server %q CA %q, want %q and the pod's CA", cluster.Server, cluster.CertificateAuthority, server)
	}
	if user.TokenFile != sa+"token" || user.Token != "" || len(user.ClientCertificateData) > 0 || user.ClientCertificate != "" {
		t.Errorf("kube-proxy's kubeconfig: user %+v, want the pod's token file only", user)
	}
}

func checkKubeProxyPod(t *testing.T, ds appsv1.DaemonSet) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if len(spec.Tolerations) != 1 || spec.Tolerations[0] != (corev1.Toleration{Operator: corev1.TolerationOpExists}) {
		t.Errorf("tolerations %+v, want every taint", spec.Tolerations)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	flags := strings.Join(spec.Containers[0].Command, " ")
	mounted := ""
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == "kubeconfig" {
			mounted = m.MountPath
		}
	}
	if mounted == "" || !strings.Contains(flags, "--kubeconfig="+mounted+"/kubeconfig") || !strings.Contains(flags, "--hostname-override=$(NODE_NAME)") {
		t.Errorf("kube-proxy %q does not read the ConfigMap mounted at %q, or names its node otherwise", flags, mounted)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.Name == "kubeconfig" && (v.ConfigMap == nil || v.ConfigMap.Name != "kube-proxy"):
			t.Errorf("volume kubeconfig is not the kube-proxy ConfigMap: %+v", v.VolumeSource)
		case v.HostPath != nil && v.HostPath.Path != "/run/xtables.lock" && v.HostPath.Path != "/lib/modules":
			t.Errorf("kube-proxy mounts the host's %s", v.HostPath.Path)
		}
	}
}
