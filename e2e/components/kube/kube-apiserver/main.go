// Command kube-apiserver is the Kubernetes API server of the end-to-end
// proof, linked from k8s.io/kubernetes's cmd/kube-apiserver/app.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones resolve without the host's zoneinfo

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the build-info metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
