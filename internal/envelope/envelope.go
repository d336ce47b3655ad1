package envelope

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
)

// KMS is the part of the KMS API we call.
type KMS interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ KMS = (*kms.Client)(nil)

// ErrOpen is returned for any sealed value that does not open: tampered,
// truncated, moved to another purpose, node or cluster. It carries no detail
// on purpose: the caller logs which row, never why the bytes failed.
var ErrOpen = errors.New("sealed value does not open")

// kmsPurpose is the fixed purpose in the KMS encryption context: it keeps our
// data keys from being confused with any other use of the same KMS key.
const kmsPurpose = "k8sapi-cluster-secrets"

const (
	formatV1 = 1
	keyBytes = 32
)

// Scope names the cluster a data key belongs to.
type Scope struct {
	OrgID, ClusterID int64
}

func (s Scope) kmsContext() map[string]string {
	return map[string]string{
		"org_id":     strconv.FormatInt(s.OrgID, 10),
		"cluster_id": strconv.FormatInt(s.ClusterID, 10),
		"purpose":    kmsPurpose,
	}
}

// Purpose names one secret within a cluster; VMID is 0 for cluster-wide secrets.
type Purpose struct {
	Name string // e.g. "ca-key", "etcd-peer-key"
	VMID int64
}

// Envelope wraps and unwraps cluster data keys with KMS.
type Envelope struct {
	kms   KMS
	keyID string
	cache *Cache
}

// New returns an Envelope using keyID. cache may be nil (no caching).
func New(client KMS, keyID string, cache *Cache) *Envelope {
	return &Envelope{kms: client, keyID: keyID, cache: cache}
}

// DataKey is an unwrapped cluster data key.
type DataKey struct {
	scope   Scope
	aead    cipher.AEAD
	Wrapped []byte // store this; never the plaintext
	KeyID   string
}

// NewDataKey asks KMS for a fresh data key for the cluster.
func (e *Envelope) NewDataKey(ctx context.Context, scope Scope) (*DataKey, error) {
	out, err := e.kms.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(e.keyID),
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: scope.kmsContext(),
	})
	if err != nil {
		return nil, fmt.Errorf("generating data key: %w", err)
	}
	defer clear(out.Plaintext)
	return newDataKey(scope, out.Plaintext, out.CiphertextBlob, aws.ToString(out.KeyId))
}

// OpenDataKey unwraps a stored data key (one KMS Decrypt, or none when the
// cache holds it).
func (e *Envelope) OpenDataKey(ctx context.Context, scope Scope, wrapped []byte) (*DataKey, error) {
	if k := e.cache.get(scope, wrapped); k != nil {
		return k, nil
	}
	out, err := e.kms.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    wrapped,
		KeyId:             aws.String(e.keyID),
		EncryptionContext: scope.kmsContext(),
	})
	if err != nil {
		if refused(err) {
			return nil, fmt.Errorf("unwrapping data key: %w: %w", ErrOpen, err)
		}
		return nil, fmt.Errorf("unwrapping data key: %w", err)
	}
	defer clear(out.Plaintext)
	k, err := newDataKey(scope, out.Plaintext, wrapped, aws.ToString(out.KeyId))
	if err != nil {
		return nil, err
	}
	e.cache.put(k)
	return k, nil
}

func newDataKey(scope Scope, plaintext, wrapped []byte, keyID string) (*DataKey, error) {
	if len(plaintext) != keyBytes {
		return nil, fmt.Errorf("data key is %d bytes, want %d", len(plaintext), keyBytes)
	}
	block, err := aes.NewCipher(plaintext)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &DataKey{scope: scope, aead: aead, Wrapped: wrapped, KeyID: keyID}, nil
}

// additionalData binds a ciphertext to its org, cluster, purpose and node.
func (k *DataKey) additionalData(p Purpose) []byte {
	return fmt.Appendf(nil, "k8sapi/envelope/v1\x00org=%d\x00cluster=%d\x00purpose=%s\x00vm=%d",
		k.scope.OrgID, k.scope.ClusterID, p.Name, p.VMID)
}

// Seal encrypts plaintext for purpose p.
func (k *DataKey) Seal(p Purpose, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), 1+k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("sealing %s: nonce: %w", p.Name, err)
	}
	out := append([]byte{formatV1}, nonce...)
	return k.aead.Seal(out, nonce, plaintext, k.additionalData(p)), nil
}

// Open decrypts a value sealed for purpose p; anything else is ErrOpen.
func (k *DataKey) Open(p Purpose, sealed []byte) ([]byte, error) {
	ns := k.aead.NonceSize()
	if len(sealed) < 1+ns+k.aead.Overhead() || sealed[0] != formatV1 {
		return nil, ErrOpen
	}
	plain, err := k.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], k.additionalData(p))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// refused reports whether KMS answered that this ciphertext does not open
// here (tampered, wrong context, another key, no permission): a 500 for the
// caller, not an outage. Throttling and server faults are outages, not
// tampering.
func refused(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "ThrottlingException", "KMSInternalException", "DependencyTimeoutException", "KeyUnavailableException":
		return false
	}
	// KMS answered and did not blame itself: the request (this ciphertext,
	// context or permission) is what is wrong. Real KMS says
	// InvalidCiphertextException; moto says AccessDeniedException.
	return apiErr.ErrorFault() != smithy.FaultServer
}
