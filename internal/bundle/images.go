package bundle

import (
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// containerImage is an image by its repository below a registry, its tag,
// and home, the registry upstream publishes it at when that is not
// artifacts.UpstreamImageRegistry.
type containerImage struct{ repo, tag, home string }

// ref is the image's reference for a cluster whose registry is registry.
func (i containerImage) ref(registry string) string {
	if registry == artifacts.UpstreamImageRegistry && i.home != "" {
		registry = i.home
	}
	return registry + "/" + i.repo + ":" + i.tag
}

// imagesView names every container image k8sapi's manifests run on a
// control-plane node: one place for the manifests that run them and for
// the bootstrap, which pulls them ahead.
type imagesView struct {
	APIServer, ControllerManager, Scheduler, KubeProxy, CoreDNS string
	Flannel                                                     string // under the flannel CNI only
	// Ahead is every image the node will run, in the order it needs them:
	// the sandbox's and the API server's first (the API server is the
	// bootstrap's critical path), the addons' last. The bootstrap pulls
	// them one at a time from the moment containerd runs, while etcd finds
	// its quorum: the kubelet's own pull of an image finds it there or in
	// progress, and the addons' pods start without a pull once the addons
	// are applied, so no addon pull competes with the API server's.
	Ahead []string
}

// nodeImage is a row of the images table: the view's field that names the
// image (nil: the sandbox's, which containerd's configuration names), the
// image, and the one CNI whose clusters run it ("": every cluster).
type nodeImage struct {
	field *string
	image containerImage
	cni   clusterfacts.CNI
}

// newImagesView fills the view from the images table, in Ahead's order.
func newImagesView(a artifacts.Set, kubernetesVersion string, cni clusterfacts.CNI) imagesView {
	var v imagesView
	kube := func(repo string) containerImage { return containerImage{repo: repo, tag: kubernetesVersion} }
	table := []nodeImage{
		{nil, containerImage{repo: "pause", tag: a.PauseVersion}, ""},
		{&v.APIServer, kube("kube-apiserver"), ""},
		{&v.ControllerManager, kube("kube-controller-manager"), ""},
		{&v.Scheduler, kube("kube-scheduler"), ""},
		{&v.KubeProxy, kube("kube-proxy"), ""},
		// Before CoreDNS: no node is Ready (and no pod starts) until
		// flannel has written its node's lease.
		{&v.Flannel, containerImage{repo: "flannel-io/flannel", tag: a.FlannelVersion, home: "ghcr.io"}, clusterfacts.CNIFlannel},
		{&v.CoreDNS, containerImage{repo: "coredns/coredns", tag: a.CoreDNSVersion}, ""},
	}
	for _, row := range table {
		if row.cni == "" || row.cni == cni {
			v.add(row, a.ImageRegistry)
		}
	}
	return v
}

// add names row's image in its field and pulls it ahead.
func (v *imagesView) add(row nodeImage, registry string) {
	ref := row.image.ref(registry)
	if row.field != nil {
		*row.field = ref
	}
	v.Ahead = append(v.Ahead, ref)
}
