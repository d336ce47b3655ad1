package localaws

import (
	"context"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/proc"
)

func TestStartMotoStartsAndStops(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "") // force a fresh server
	ctx := context.Background()
	endpoint, stop, err := StartMoto(ctx, "", devtest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := AWSConfig(endpoint)
	id1, err := CreateKMSKey(ctx, cfg, LocalKeyAlias)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := CreateKMSKey(ctx, cfg, LocalKeyAlias)
	if err != nil || id1 != id2 {
		t.Fatalf("the alias should be reused: %s then %s (%v)", id1, id2, err)
	}
	secret := DBSecret{Username: "u", Host: "127.0.0.1", Port: 5432, DBName: "d", Engine: "postgres"}
	arn1, err := PutDBSecret(ctx, cfg, "k8sapi/test", secret)
	if err != nil {
		t.Fatal(err)
	}
	arn2, err := PutDBSecret(ctx, cfg, "k8sapi/test", secret)
	if err != nil || arn1 != arn2 || !strings.HasPrefix(arn1, "arn:aws:secretsmanager:") {
		t.Fatalf("secret ARNs %s, %s (%v)", arn1, arn2, err)
	}
	stop()
	if err := proc.HTTPAnswers(ctx, endpoint); err == nil {
		t.Fatal("moto still answers after stop")
	}
}

func TestMissingMoto(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("PATH", t.TempDir())
	_, _, err := StartMoto(context.Background(), "", devtest.Logger(t))
	want := "missing dependency: moto_server (local KMS, Secrets Manager and S3) not found; install it with: pip install 'moto[server]'"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}
