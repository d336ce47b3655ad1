package vm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/excloud/k8sapi/internal/store"
)

// createTokenKeyBytes is the length of a cluster's create token key (the
// CHECK of migration 012 holds the column to it).
const createTokenKeyBytes = 32

// NewTokenKey is a fresh cluster's key for its create tokens, stored
// with the cluster before its first create is sent.
func NewTokenKey() []byte {
	b := make([]byte, createTokenKeyBytes)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return b
}

// Token is the idempotency token of one remote create of cluster c, for
// the object's ordinal or purpose ("cp-2", "sg", "sg-rule-1"): an HMAC of
// the purpose under the cluster's recorded key, so every driver of the same
// founding, in any process, sends the same token for the same object, and
// nobody who knows only the cluster's id (or another cluster's tokens) can
// send a create under it first and have founding adopt their object.
func Token(c *store.Cluster, purpose string) string {
	if len(c.CreateTokenKey) == 0 {
		return legacyToken(c.ID, purpose)
	}
	mac := hmac.New(sha256.New, c.CreateTokenKey)
	mac.Write([]byte(purpose))
	return "k8sapi-" + hex.EncodeToString(mac.Sum(nil)[:16])
}

// legacyToken is the token of a cluster founded before migration 012: its
// creates already went out under it, and repeating one (to finish or undo
// it) must send the same token to find what it made.
func legacyToken(clusterID int64, purpose string) string {
	return fmt.Sprintf("k8sapi-cluster-%d-%s", clusterID, purpose)
}
