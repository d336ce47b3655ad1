package awssecret

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/excloud/k8sapi/internal/testenv"
)

// A secret stored in moto's Secrets Manager reads back as stored; a
// missing one is the service's error type, never retried into success.
func TestReadsWhatSecretsManagerHolds(t *testing.T) {
	ctx := context.Background()
	cfg := testenv.AWSConfig(testenv.Moto(t))
	name := "awssecret-" + strings.ReplaceAll(t.Name(), "/", "-")
	out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(name), SecretString: aws.String(`{"password":"s3cr3t"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{name, aws.ToString(out.ARN)} {
		if got, err := New(cfg).SecretString(ctx, id); err != nil || got != `{"password":"s3cr3t"}` {
			t.Errorf("SecretString(%s) = %q, %v", id, got, err)
		}
	}
	_, err = New(cfg).SecretString(ctx, name+"-missing")
	if err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException (HTTP ") {
		t.Errorf("a missing secret: %v", err)
	}
}

// The service's own failures are retried, a refusal is not; every call is
// signed for secretsmanager with the JSON 1.1 target.
func TestRetriesOnlyWhatMayPass(t *testing.T) {
	var calls atomic.Int32
	answers := []func(http.ResponseWriter){
		func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) },
		func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"ThrottlingException"}`))
		},
		func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"SecretString":"token"}`)) },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
			!strings.Contains(r.Header.Get("Authorization"), "/secretsmanager/aws4_request") {
			t.Errorf("call %d: target %q, authorization %q", n, r.Header.Get("X-Amz-Target"), r.Header.Get("Authorization"))
		}
		answers[min(int(n), len(answers))-1](w)
	}))
	defer srv.Close()
	cfg := testenv.AWSConfig(srv.URL)
	if got, err := New(cfg).SecretString(context.Background(), "s"); err != nil || got != "token" || calls.Load() != 3 {
		t.Fatalf("= %q, %v after %d calls; want token after 3", got, err, calls.Load())
	}
	calls.Store(0)
	answers = []func(http.ResponseWriter){func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.secretsmanager#AccessDeniedException","message":"no"}`))
	}}
	_, err := New(cfg).SecretString(context.Background(), "s")
	if err == nil || !strings.Contains(err.Error(), "AccessDeniedException (HTTP 400)") || calls.Load() != 1 {
		t.Fatalf("a refusal: %v after %d calls; want AccessDeniedException after 1", err, calls.Load())
	}
}
