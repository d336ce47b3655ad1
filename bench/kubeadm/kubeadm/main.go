// Command kubeadm is upstream kubeadm (k8s.io/kubernetes/cmd/kubeadm),
// built here only for the side-by-side of `make bench`. Never imported by
// the product.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	utilerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	utilerrors.HandleError(app.Run())
}
