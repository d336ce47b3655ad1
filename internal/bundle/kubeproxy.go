package bundle

import "github.com/excloud/k8sapi/internal/clusterfacts"

// kubeProxyView is what kube-proxy.yaml renders: where kube-proxy reaches
// the API server and where its pod finds the kubeconfig that says so.
// kube-proxy authenticates with its pod's service-account token, so the
// same DaemonSet runs on control-plane nodes and workers, and no node
// holds a kube-proxy identity (the cert table's is retired).
type kubeProxyView struct {
	// Server is the API server by the control plane's DNS name, as a
	// worker's kubelet reaches it: not the kubernetes Service, which only
	// kube-proxy's own rules route.
	Server string
	// ConfigDir is where the kube-proxy ConfigMap is mounted in its pod.
	ConfigDir string
}

func newKubeProxyView(c clusterfacts.Cluster) kubeProxyView {
	return kubeProxyView{Server: WorkerAPIServerURL(c), ConfigDir: "/var/lib/kube-proxy"}
}
