package integration

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/testenv"
)

// deadKMS is a KMS client whose endpoint refuses connections.
func deadKMS() *envelope.Envelope {
	cfg := testenv.AWSConfig("http://127.0.0.1:1")
	cfg.RetryMaxAttempts = 1
	client := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String("http://127.0.0.1:1") })
	return envelope.New(client, "alias/none", nil)
}

func TestKMSUnreachableFoundsNothing(t *testing.T) {
	s := newStack(t)
	s.founder.Envelope = deadKMS()
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, s.Bearer(1))
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "kms_unavailable" {
		t.Fatalf("= %d %s, want 503 kms_unavailable", r.Status, r.Body)
	}
	assertNothingFounded(t, s)
}
