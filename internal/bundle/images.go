package bundle

// imagesView names every container image k8sapi's manifests run on a
// control-plane node: one place for the manifests that run them and for
// the bootstrap, which pulls the addons' ahead.
type imagesView struct {
	APIServer, ControllerManager, Scheduler, KubeProxy, CoreDNS string
	// Ahead are pulled while etcd finds its quorum and the API server
	// starts: kube-proxy (every node runs it) and CoreDNS (any node may),
	// which the kubelet would otherwise pull only once the addons are
	// applied, after the API server is up. The static pods' images are not
	// among them: the kubelet pulls those the moment it starts.
	Ahead []string
}

func newImagesView(a Artifacts, kubernetesVersion string) imagesView {
	kube := func(name string) string { return a.ImageRegistry + "/" + name + ":" + kubernetesVersion }
	v := imagesView{
		APIServer:         kube("kube-apiserver"),
		ControllerManager: kube("kube-controller-manager"),
		Scheduler:         kube("kube-scheduler"),
		KubeProxy:         kube("kube-proxy"),
		CoreDNS:           a.ImageRegistry + "/coredns/coredns:" + a.CoreDNSVersion,
	}
	v.Ahead = []string{v.KubeProxy, v.CoreDNS}
	return v
}
