package carotation_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/carotation"
	"github.com/excloud/k8sapi/templates"
)

// The distrust waits out the longest service-account token the cluster
// allows: the API server's --service-account-max-token-expiration is not
// longer than DefaultDistrustWait, so no token the old signer issued is
// still valid when its public key leaves every node's bundle.
func TestNoServiceAccountTokenOutlivesTheDistrustWait(t *testing.T) {
	manifest, err := templates.FS.ReadFile("kube-apiserver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--service-account-max-token-expiration=(\S+)`).FindSubmatch(manifest)
	if m == nil {
		t.Fatal("kube-apiserver.yaml sets no --service-account-max-token-expiration: a token may be asked for with any lifetime")
	}
	longest, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if longest > carotation.DefaultDistrustWait {
		t.Errorf("tokens live up to %s, longer than the distrust wait %s", longest, carotation.DefaultDistrustWait)
	}
}
