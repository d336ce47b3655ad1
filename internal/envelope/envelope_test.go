package envelope_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/testenv"
)

// These tests run against moto's real KMS API: the encryption context is
// enforced by KMS itself, not by a fake of ours.

func TestSealOpenRoundTrip(t *testing.T) {
	client, keyID := testenv.KMSKey(t)
	env := envelope.New(client, keyID, nil)
	ctx := context.Background()
	scope := envelope.Scope{OrgID: 1, ClusterID: 42}

	dk, err := env.NewDataKey(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----\n")
	p := envelope.Purpose{Name: "ca-key"}
	sealed, err := dk.Seal(p, secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) {
		t.Fatal("sealed value contains plaintext")
	}

	// A fresh container unwraps the stored data key through KMS and opens.
	reopened, err := envelope.New(client, keyID, nil).OpenDataKey(ctx, scope, dk.Wrapped)
	if err != nil {
		t.Fatal(err)
	}
	got, err := reopened.Open(p, sealed)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

func TestMovedCiphertextFailsToOpen(t *testing.T) {
	client, keyID := testenv.KMSKey(t)
	env := envelope.New(client, keyID, nil)
	ctx := context.Background()
	scope := envelope.Scope{OrgID: 1, ClusterID: 42}
	dk, err := env.NewDataKey(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	p := envelope.Purpose{Name: "etcd-peer-key", VMID: 7}
	sealed, _ := dk.Seal(p, []byte("node seven's key"))

	for name, other := range map[string]envelope.Purpose{
		"other purpose": {Name: "apiserver-key", VMID: 7},
		"other node":    {Name: "etcd-peer-key", VMID: 8},
	} {
		if _, err := dk.Open(other, sealed); !errors.Is(err, envelope.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}

	// The wrapped data key presented as another cluster's or org's: KMS
	// itself refuses the encryption context.
	for name, wrong := range map[string]envelope.Scope{
		"other cluster": {OrgID: 1, ClusterID: 43},
		"other org":     {OrgID: 2, ClusterID: 42},
	} {
		if _, err := env.OpenDataKey(ctx, wrong, dk.Wrapped); err == nil {
			t.Errorf("%s: data key unwrapped under the wrong context", name)
		}
	}

	// Every single flipped byte fails closed.
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := dk.Open(p, bad); !errors.Is(err, envelope.ErrOpen) {
			t.Fatalf("byte %d flipped: err = %v", i, err)
		}
	}
	if _, err := dk.Open(p, sealed[:5]); !errors.Is(err, envelope.ErrOpen) {
		t.Errorf("truncated: err = %v", err)
	}
}

func TestCacheBoundsKMSCalls(t *testing.T) {
	client, keyID := testenv.KMSKey(t)
	now := time.Unix(1_800_000_000, 0)
	cache := envelope.NewCache(time.Minute, 3, 16)
	cache.Now = func() time.Time { return now }
	env := envelope.New(metrics.CountKMS(client), keyID, cache)
	ctx, calls := metrics.WithCounters(context.Background())
	scope := envelope.Scope{OrgID: 3, ClusterID: 9}
	dk, err := env.NewDataKey(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	open := func() {
		t.Helper()
		if _, err := env.OpenDataKey(ctx, scope, dk.Wrapped); err != nil {
			t.Fatal(err)
		}
	}
	base := calls.KMSCalls() // GenerateDataKey
	open()                   // miss: Decrypt
	open()                   // hit
	open()                   // hit (third use)
	if got := calls.KMSCalls() - base; got != 1 {
		t.Fatalf("KMS calls after 3 opens = %d, want 1", got)
	}
	open() // use count exhausted: Decrypt again
	if got := calls.KMSCalls() - base; got != 2 {
		t.Fatalf("KMS calls after use limit = %d, want 2", got)
	}
	now = now.Add(2 * time.Minute)
	open() // aged out
	if got := calls.KMSCalls() - base; got != 3 {
		t.Fatalf("KMS calls after max age = %d, want 3", got)
	}
	// A cached key never opens for another scope.
	if _, err := env.OpenDataKey(ctx, envelope.Scope{OrgID: 3, ClusterID: 10}, dk.Wrapped); err == nil {
		t.Fatal("cache served a data key to another cluster")
	}
}
