package testenv_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// Each call yields its own database, with both migration sets applied.
func TestPostgresGivesFreshMigratedDatabases(t *testing.T) {
	ctx := context.Background()
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	if a == b {
		t.Fatalf("two calls returned the same DSN %q", a)
	}
	connA := connect(t, a)
	if _, err := connA.Exec(ctx, `INSERT INTO principal_tokens (hash, org_id, expires_at) VALUES ('x', 1, now())`); err != nil {
		t.Fatalf("dev platform table missing: %v", err)
	}
	for _, table := range []string{"kube_clusters", "kube_nodes", "node_identities", "principal_tokens", "imds_tokens", "vms", "interfaces"} {
		var n int
		if err := connect(t, b).QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatalf("table %s: %v", table, err)
		}
		if n != 0 && table == "principal_tokens" {
			t.Fatalf("database b sees database a's row: not isolated")
		}
	}
	for _, vt := range []string{"schema_version_k8sapi", "schema_version_platformdev"} {
		var v int
		if err := connA.QueryRow(ctx, "SELECT version FROM "+vt).Scan(&v); err != nil || v < 1 {
			t.Fatalf("version table %s: version %d, err %v", vt, v, err)
		}
	}
}

// The database is gone once the test that asked for it has ended.
func TestPostgresDropsDatabaseOnCleanup(t *testing.T) {
	var dsn string
	t.Run("inner", func(t *testing.T) { dsn = testenv.Postgres(t) })
	conn, err := pgx.Connect(context.Background(), dsn)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("database still exists after its test ended")
	}
}

// moto's KMS round-trips data under the key, and really enforces the
// encryption context (what internal/envelope relies on).
func TestKMSKeyEncryptsWithContext(t *testing.T) {
	ctx := context.Background()
	client, keyID := testenv.KMSKey(t)
	_, otherKey := testenv.KMSKey(t)
	if keyID == otherKey {
		t.Fatal("two calls returned the same key")
	}
	ec := map[string]string{"cluster_id": "7"}
	out, err := client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyID), KeySpec: "AES_256", EncryptionContext: ec})
	if err != nil {
		t.Fatalf("GenerateDataKey: %v", err)
	}
	dec, err := client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: out.CiphertextBlob, EncryptionContext: ec})
	if err != nil || string(dec.Plaintext) != string(out.Plaintext) {
		t.Fatalf("Decrypt: err %v, plaintext matches %v", err, err == nil && string(dec.Plaintext) == string(out.Plaintext))
	}
	if _, err := client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: out.CiphertextBlob, EncryptionContext: map[string]string{"cluster_id": "8"}}); err == nil {
		t.Fatal("Decrypt with a wrong encryption context succeeded")
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
