package wiring

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/testenv"
)

// The one-request Decrypt opens what KMS (moto) wrapped, as the SDK's
// client does; a wrong encryption context is KMS's refusal, a client
// fault (the envelope's ErrOpen), not an outage.
func TestKMSDecryptCallIsTheClients(t *testing.T) {
	client, keyID := testenv.KMSKey(t)
	cfg := testenv.AWSConfig(testenv.Moto(t))
	ctx := context.Background()
	ec := map[string]string{"org_id": "1", "cluster_id": "2", "purpose": "k8sapi-cluster-secrets"}
	gen, err := client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyID), KeySpec: "AES_256", EncryptionContext: ec})
	if err != nil {
		t.Fatal(err)
	}
	decrypt := kmsDecryptCall(cfg, http.DefaultClient)
	out, err := decrypt(ctx, &kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, KeyId: aws.String(keyID), EncryptionContext: ec})
	if err != nil || !bytes.Equal(out.Plaintext, gen.Plaintext) || aws.ToString(out.KeyId) == "" {
		t.Fatalf("decrypt: %v", err)
	}
	wrong := map[string]string{"org_id": "1", "cluster_id": "3", "purpose": "k8sapi-cluster-secrets"}
	_, err = decrypt(ctx, &kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, KeyId: aws.String(keyID), EncryptionContext: wrong})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorFault() != smithy.FaultClient || apiErr.ErrorCode() == "" {
		t.Fatalf("wrong context: %v", err)
	}
	// Through the envelope: sealed with the SDK's client, opened with the
	// one request; another cluster's scope does not open.
	sealer := envelope.New(client, keyID, nil)
	opener := envelope.New(kmsCalls{generate: refuseGenerate, decrypt: decrypt}, keyID, nil)
	scope := envelope.Scope{OrgID: 1, ClusterID: 2}
	dk, err := sealer.NewDataKey(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := dk.Seal(envelope.Purpose{Name: "ca-key"}, []byte("a CA key"))
	if err != nil {
		t.Fatal(err)
	}
	opened, err := opener.OpenDataKey(ctx, scope, dk.Wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := opened.Open(envelope.Purpose{Name: "ca-key"}, sealed); err != nil || string(plain) != "a CA key" {
		t.Fatalf("opened %q, %v", plain, err)
	}
	if _, err := opener.OpenDataKey(ctx, envelope.Scope{OrgID: 1, ClusterID: 3}, dk.Wrapped); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("another cluster's scope: %v, want ErrOpen", err)
	}
}

// A function whose key policy grants nothing (ClustersFunction) refuses
// both calls itself, the way KMS would refuse them in AWS, so a use case
// that starts to need a data key there fails locally as it would deployed.
func TestClosedEnvelopeRefusesEveryKMSCall(t *testing.T) {
	app := &App{Config: config.Config{KMSKeyID: "k"}}
	env := app.ClosedEnvelope()
	scope := envelope.Scope{OrgID: 1, ClusterID: 2}
	// Refused here, not by a KMS client's failing request.
	if _, err := env.NewDataKey(context.Background(), scope); err == nil || !strings.Contains(err.Error(), "opens data keys only") {
		t.Errorf("a closed envelope made a data key: %v", err)
	}
	if _, err := env.OpenDataKey(context.Background(), scope, []byte("wrapped")); err == nil || !strings.Contains(err.Error(), "opens no data keys") {
		t.Errorf("a closed envelope opened a data key: %v", err)
	}
}
