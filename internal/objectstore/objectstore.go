// Package objectstore is k8sapi's uses of S3, the etcd snapshots' bucket:
// a presigned PUT URL of exactly one object key, which a node uploads its
// snapshot to without holding any storage credential, a HEAD of that key,
// which says the upload is there and how large it is, and a presigned GET
// URL of one key, which a restored cluster's node downloads it from.
//
// Both are the SDK's SigV4 signer over net/http, not the SDK's S3 client:
// GetBundleFunction, which serves the node's snapshot routes, renders
// templates and is held to 12 MiB (.ci/check-lambda-builds), and the S3
// client and its presign client add megabytes to it. The presigned URL is
// the one s3.PresignClient makes for a PutObject without a body checksum:
// path and query signed (X-Amz-SignedHeaders=host), payload unsigned.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// unsignedPayload is S3's payload hash of a presigned request.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// emptyPayload is the SHA-256 of an empty body (a HEAD's).
const emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// MaxURLLifetime bounds a presigned URL: SigV4 allows a week; a snapshot's
// upload needs minutes.
const MaxURLLifetime = time.Hour

// ErrUnavailable wraps every failure to reach the bucket or to sign for it.
var ErrUnavailable = errors.New("object store unavailable")

// Bucket is one S3 bucket, addressed at the configured endpoint
// (AWS_ENDPOINT_URL, path-style: moto locally) or at the region's
// virtual-hosted endpoint.
type Bucket struct {
	AWS  aws.Config
	Name string
	// NodeEndpoint is the store's endpoint as the nodes reach it, used
	// only for the URLs presigned for them (path-style, like a configured
	// endpoint): the signature covers the host the node calls. Empty: the
	// endpoint k8sapi uses, which is right wherever nodes reach the store
	// as the functions do (S3 in AWS).
	NodeEndpoint string
	HTTP         *http.Client // nil: a client with a 10 s timeout
	Now          func() time.Time
}

// ObjectURL is the URL of key (key's characters are the snapshot keys':
// letters, digits, '/', '-', '.').
func (b *Bucket) ObjectURL(key string) string {
	if b.AWS.BaseEndpoint != nil && *b.AWS.BaseEndpoint != "" {
		return b.pathStyleURL(*b.AWS.BaseEndpoint, key)
	}
	return "https://" + b.Name + ".s3." + b.AWS.Region + ".amazonaws.com/" + key
}

// NodeObjectURL is the URL of key as the nodes reach it: at NodeEndpoint
// when one is set, else ObjectURL.
func (b *Bucket) NodeObjectURL(key string) string {
	if b.NodeEndpoint != "" {
		return b.pathStyleURL(b.NodeEndpoint, key)
	}
	return b.ObjectURL(key)
}

func (b *Bucket) pathStyleURL(endpoint, key string) string {
	return strings.TrimSuffix(endpoint, "/") + "/" + b.Name + "/" + key
}

// PresignPut is a URL that PUTs key, and nothing else, for lifetime: the
// signature covers the method, the host and the path, so another key or
// another bucket is a different request the signature does not match.
// It makes no network call (only the credentials may be fetched).
func (b *Bucket) PresignPut(ctx context.Context, key string, lifetime time.Duration) (string, time.Time, error) {
	return b.presign(ctx, http.MethodPut, key, lifetime)
}

// PresignGet is a URL that GETs key, and nothing else, for lifetime (a
// restored cluster's node downloads its snapshot with it), signed as
// PresignPut's.
func (b *Bucket) PresignGet(ctx context.Context, key string, lifetime time.Duration) (string, time.Time, error) {
	return b.presign(ctx, http.MethodGet, key, lifetime)
}

func (b *Bucket) presign(ctx context.Context, method, key string, lifetime time.Duration) (string, time.Time, error) {
	if lifetime <= 0 || lifetime > MaxURLLifetime {
		return "", time.Time{}, fmt.Errorf("presigning %s: lifetime %s out of (0, %s]", key, lifetime, MaxURLLifetime)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.NodeObjectURL(key), nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("presigning %s: %w", key, err)
	}
	q := req.URL.Query()
	q.Set("X-Amz-Expires", strconv.FormatInt(int64(lifetime/time.Second), 10))
	req.URL.RawQuery = q.Encode()
	creds, err := b.credentials(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	now := b.now()
	signed, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, unsignedPayload, "s3", b.AWS.Region, now, s3Options)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: presigning %s %s: %v", ErrUnavailable, method, key, err)
	}
	return signed, now.Add(lifetime), nil
}

// Size is the size of the object at key, found false when there is none.
func (b *Bucket) Size(ctx context.Context, key string) (size int64, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, b.ObjectURL(key), nil)
	if err != nil {
		return 0, false, fmt.Errorf("HEAD %s: %w", key, err)
	}
	req.Header.Set("X-Amz-Content-Sha256", emptyPayload)
	creds, err := b.credentials(ctx)
	if err != nil {
		return 0, false, err
	}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptyPayload, "s3", b.AWS.Region, b.now(), s3Options); err != nil {
		return 0, false, fmt.Errorf("%w: signing HEAD %s: %v", ErrUnavailable, key, err)
	}
	resp, err := b.client().Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("%w: HEAD %s: %v", ErrUnavailable, key, err)
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return resp.ContentLength, true, nil
	case resp.StatusCode == http.StatusNotFound:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("%w: HEAD %s: %s", ErrUnavailable, key, resp.Status)
}

// s3Options: S3 signs the path as sent, not escaped a second time.
func s3Options(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }

func (b *Bucket) credentials(ctx context.Context) (aws.Credentials, error) {
	if b.Name == "" {
		return aws.Credentials{}, fmt.Errorf("%w: no bucket configured (ETCD_SNAPSHOT_BUCKET)", ErrUnavailable)
	}
	if b.AWS.Credentials == nil {
		return aws.Credentials{}, fmt.Errorf("%w: no AWS credentials", ErrUnavailable)
	}
	creds, err := b.AWS.Credentials.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("%w: credentials: %v", ErrUnavailable, err)
	}
	return creds, nil
}

func (b *Bucket) client() *http.Client {
	if b.HTTP != nil {
		return b.HTTP
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (b *Bucket) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// KeyOf is the object key a presigned URL names (its path, less the
// bucket for a path-style URL): tests and tools.
func KeyOf(bucket, rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	p := strings.TrimPrefix(u.Path, "/")
	if strings.HasPrefix(u.Host, bucket+".") {
		return p, nil
	}
	return strings.TrimPrefix(p, bucket+"/"), nil
}
