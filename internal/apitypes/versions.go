package apitypes

// KubernetesVersions is GET /kubernetes-versions: every Kubernetes version
// k8sapi founds clusters at, oldest first, and the one a founding without
// kubernetes_version gets.
type KubernetesVersions struct {
	Default  string              `json:"default"`
	Versions []KubernetesVersion `json:"versions"`
}

// KubernetesVersion is one supported release: what runs beside it, where a
// cluster at it may be upgraded to in one pass, and what the conformance
// suite said of a cluster founded at it ("" when it has not run on one).
type KubernetesVersion struct {
	Version        string   `json:"kubernetes_version"`
	EtcdVersion    string   `json:"etcd_version"`
	CoreDNSVersion string   `json:"coredns_version"`
	PauseVersion   string   `json:"pause_version"`
	UpgradesTo     []string `json:"upgrades_to"`
	Conformance    string   `json:"conformance"`
}
