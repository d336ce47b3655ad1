// Module pause builds the node proof's pod sandbox (pause) image binary.
module github.com/excloud/k8sapi/e2e/components/pause

go 1.25.0
