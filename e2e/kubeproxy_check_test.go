package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/excloud/k8sapi/e2e/harness"
)

// podServiceAccountDir is where the kubelet projects a pod's token and CA.
const podServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

// checkKubeProxyIdentity: kube-proxy authenticates as kube-proxy.yaml's
// ServiceAccount, on a worker as on the control plane. Its objects but
// the DaemonSet (this proof runs no pods) are applied for real; the
// kubeconfig its ConfigMap holds names the control plane's DNS name and
// the pod's CA and token file; a token of the account, sent to that name
// (pointed at node 1: there is no DNS here) over the cluster CA, reads
// what kube-proxy watches and is refused Secrets and pods.
func checkKubeProxyIdentity(t *testing.T, admin *rest.Config, adminKubeconfig, manifest []byte, dnsName string, n1 *node, dial harness.DialFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if objs, err := harness.Apply(ctx, admin, withoutDaemonSets(manifest)); err != nil {
		fatalf(t, "applying kube-proxy.yaml's account, binding and kubeconfig: %v", err)
	} else {
		t.Logf("applied %s", strings.Join(objs, ", "))
	}
	cs := kubernetes.NewForConfigOrDie(admin)
	server := "https://" + dnsName + ":6443"
	checkKubeProxyKubeconfig(ctx, t, cs, server)

	exp := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "kube-proxy",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		fatalf(t, "TokenRequest for kube-system/kube-proxy: %v", err)
	}
	base, err := harness.KubeConfig(adminKubeconfig, server, dial, map[string]string{dnsName + ":6443": n1.ip() + ":6443"})
	if err != nil {
		fatal(t, err)
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = tr.Status.Token
	checkNodeProxierRights(ctx, t, kubernetes.NewForConfigOrDie(cfg))
}

// withoutDaemonSets is a multi-document manifest less its DaemonSets.
func withoutDaemonSets(manifest []byte) []byte {
	var keep []string
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		if !strings.Contains(doc, "\nkind: DaemonSet\n") {
			keep = append(keep, doc)
		}
	}
	return []byte(strings.Join(keep, "\n---\n"))
}

// checkKubeProxyKubeconfig: the applied ConfigMap's kubeconfig names server
// and the pod's own CA and token, no credential of its own.
func checkKubeProxyKubeconfig(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, server string) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		fatalf(t, "kube-proxy's ConfigMap: %v", err)
	}
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		fatalf(t, "kube-proxy's kubeconfig: %v", err)
	}
	ctxEntry := kc.Contexts[kc.CurrentContext]
	if ctxEntry == nil || kc.Clusters[ctxEntry.Cluster] == nil || kc.AuthInfos[ctxEntry.AuthInfo] == nil {
		fatalf(t, "kube-proxy's kubeconfig has no current context with a cluster and a user:\n%s", cm.Data["kubeconfig"])
	}
	cluster, user := kc.Clusters[ctxEntry.Cluster], kc.AuthInfos[ctxEntry.AuthInfo]
	if cluster.Server != server || cluster.CertificateAuthority != podServiceAccountDir+"ca.crt" ||
		user.TokenFile != podServiceAccountDir+"token" || len(user.ClientCertificateData) > 0 || user.Token != "" {
		errorf(t, "kube-proxy's kubeconfig: server %q, CA %q, user %+v; want %s and the pod's CA and token file", cluster.Server, cluster.CertificateAuthority, user, server)
	}
}

// checkNodeProxierRights: the account lists Services, EndpointSlices and
// Nodes (what kube-proxy watches) and is refused Secrets and pods.
func checkNodeProxierRights(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	list := metav1.ListOptions{Limit: 1}
	allowed := map[string]func() error{
		"list Services":       func() error { _, err := cs.CoreV1().Services("").List(ctx, list); return err },
		"list EndpointSlices": func() error { _, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, list); return err },
		"list Nodes":          func() error { _, err := cs.CoreV1().Nodes().List(ctx, list); return err },
	}
	for what, call := range allowed {
		if err := call(); err != nil {
			errorf(t, "kube-proxy's account may not %s through the control plane's name: %v", what, err)
		}
	}
	refused := map[string]func() error{
		"list kube-system's Secrets": func() error { _, err := cs.CoreV1().Secrets("kube-system").List(ctx, list); return err },
		"list pods":                  func() error { _, err := cs.CoreV1().Pods("").List(ctx, list); return err },
	}
	for what, call := range refused {
		if err := call(); !apierrors.IsForbidden(err) {
			errorf(t, "kube-proxy's account may %s (want 403): %v", what, err)
		}
	}
	t.Logf("kube-proxy's account, through the control plane's name: lists Services, EndpointSlices and Nodes; 403 for Secrets and pods")
}
