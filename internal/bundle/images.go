package bundle

// imagesView names every container image k8sapi's manifests run on a
// control-plane node: one place for the manifests that run them and for
// the bootstrap, which pulls them ahead.
type imagesView struct {
	APIServer, ControllerManager, Scheduler, KubeProxy, CoreDNS string
	// Ahead is every image the node will run, in the order it needs them:
	// the sandbox's and the API server's first (the API server is the
	// bootstrap's critical path), the addons' last. The bootstrap pulls
	// them one at a time from the moment containerd runs, while etcd finds
	// its quorum: the kubelet's own pull of an image finds it there or in
	// progress, and the addons' pods start without a pull once the addons
	// are applied, so no addon pull competes with the API server's.
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
	pause := a.ImageRegistry + "/pause:" + a.PauseVersion
	v.Ahead = []string{pause, v.APIServer, v.ControllerManager, v.Scheduler, v.KubeProxy, v.CoreDNS}
	return v
}
