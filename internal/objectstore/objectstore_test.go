package objectstore

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func bucket(endpoint string) *Bucket {
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	return &Bucket{AWS: cfg, Name: "k8sapi-etcd-x", Now: func() time.Time { return time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) }}
}

// In AWS a key's URL is virtual-hosted at the region's endpoint; at a
// configured endpoint (moto) it is path-style.
func TestObjectURL(t *testing.T) {
	if got := bucket("").ObjectURL("etcd-snapshots/1/2.db"); got != "https://k8sapi-etcd-x.s3.eu-west-1.amazonaws.com/etcd-snapshots/1/2.db" {
		t.Errorf("AWS: %s", got)
	}
	if got := bucket("http://127.0.0.1:5000/").ObjectURL("etcd-snapshots/1/2.db"); got != "http://127.0.0.1:5000/k8sapi-etcd-x/etcd-snapshots/1/2.db" {
		t.Errorf("moto: %s", got)
	}
}

// A presigned PUT names its key and lifetime, is signed over the host only
// (the path is in the canonical request), and differs per key; a lifetime
// out of bounds, no bucket or no credentials is refused.
func TestPresignPut(t *testing.T) {
	b := bucket("")
	raw, expires, err := b.PresignPut(context.Background(), "etcd-snapshots/1/2.db", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	if u.Host != "k8sapi-etcd-x.s3.eu-west-1.amazonaws.com" || u.Path != "/etcd-snapshots/1/2.db" || q.Get("X-Amz-Expires") != "900" ||
		q.Get("X-Amz-SignedHeaders") != "host" || !strings.HasPrefix(q.Get("X-Amz-Credential"), "AKID/20261124/eu-west-1/s3/aws4_request") ||
		len(q.Get("X-Amz-Signature")) != 64 || !expires.Equal(b.Now().Add(15*time.Minute)) {
		t.Fatalf("presigned %s, expires %s", raw, expires)
	}
	if key, err := KeyOf(b.Name, raw); err != nil || key != "etcd-snapshots/1/2.db" {
		t.Errorf("KeyOf = %q, %v", key, err)
	}
	other, _, _ := b.PresignPut(context.Background(), "etcd-snapshots/1/3.db", 15*time.Minute)
	ou, _ := url.Parse(other)
	if ou.Query().Get("X-Amz-Signature") == q.Get("X-Amz-Signature") {
		t.Error("two keys, one signature")
	}
	for _, d := range []time.Duration{0, -time.Minute, MaxURLLifetime + time.Second} {
		if _, _, err := b.PresignPut(context.Background(), "k", d); err == nil {
			t.Errorf("lifetime %s accepted", d)
		}
	}
	if _, _, err := (&Bucket{AWS: b.AWS}).PresignPut(context.Background(), "k", time.Minute); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no bucket: %v", err)
	}
	if _, _, err := (&Bucket{Name: "b"}).PresignPut(context.Background(), "k", time.Minute); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no credentials: %v", err)
	}
}

// A presigned GET names the same key as the PUT, but the method is signed:
// a GET URL is no upload URL.
func TestPresignGet(t *testing.T) {
	b := bucket("")
	get, _, err := b.PresignGet(context.Background(), "etcd-snapshots/1/2.db", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	put, _, _ := b.PresignPut(context.Background(), "etcd-snapshots/1/2.db", 15*time.Minute)
	gu, _ := url.Parse(get)
	pu, _ := url.Parse(put)
	if key, _ := KeyOf(b.Name, get); key != "etcd-snapshots/1/2.db" || gu.Query().Get("X-Amz-Expires") != "900" {
		t.Fatalf("presigned GET %s", get)
	}
	if gu.Query().Get("X-Amz-Signature") == pu.Query().Get("X-Amz-Signature") {
		t.Error("a GET and a PUT of one key share a signature")
	}
}

// With a node endpoint, presigned URLs name the store as the nodes reach
// it, and the signature covers that host (another host, another
// signature); k8sapi's own requests (ObjectURL, Size) keep its endpoint.
func TestPresignAtNodeEndpoint(t *testing.T) {
	b := bucket("http://127.0.0.1:5000")
	b.NodeEndpoint = "http://198.51.100.1:9000/"
	raw, _, err := b.PresignPut(context.Background(), "etcd-snapshots/1/2.db", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	if u.Host != "198.51.100.1:9000" || u.Path != "/k8sapi-etcd-x/etcd-snapshots/1/2.db" {
		t.Fatalf("presigned for the nodes: %s", raw)
	}
	if got := b.ObjectURL("etcd-snapshots/1/2.db"); got != "http://127.0.0.1:5000/k8sapi-etcd-x/etcd-snapshots/1/2.db" {
		t.Errorf("k8sapi's own URL moved: %s", got)
	}
	own, _, _ := bucket("http://127.0.0.1:5000").PresignPut(context.Background(), "etcd-snapshots/1/2.db", 15*time.Minute)
	ou, _ := url.Parse(own)
	if ou.Query().Get("X-Amz-Signature") == u.Query().Get("X-Amz-Signature") {
		t.Error("two hosts, one signature: the host is not signed")
	}
}
