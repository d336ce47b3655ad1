package vm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/store"
)

// A keyed cluster's tokens are stable per object, differ between objects
// and clusters, and say nothing of the cluster's id; a cluster founded
// before the key keeps the tokens its creates already went out under.
func TestCreateTokens(t *testing.T) {
	a := &store.Cluster{ID: 7, CreateTokenKey: NewTokenKey()}
	b := &store.Cluster{ID: 7, CreateTokenKey: NewTokenKey()}
	if bytes.Equal(a.CreateTokenKey, b.CreateTokenKey) || len(a.CreateTokenKey) != createTokenKeyBytes {
		t.Fatalf("keys %x and %x", a.CreateTokenKey, b.CreateTokenKey)
	}
	seen := map[string]bool{}
	for _, c := range []*store.Cluster{a, b} {
		for _, purpose := range []string{"sg", "sg-rule-1", "cp-1", "cp-2"} {
			tok := Token(c, purpose)
			if tok != Token(c, purpose) {
				t.Errorf("%s: the token changes between calls", purpose)
			}
			if seen[tok] || strings.Contains(tok, "cluster") || len(tok) != len("k8sapi-")+32 {
				t.Errorf("%s: token %q repeats, names the cluster or has the wrong length", purpose, tok)
			}
			seen[tok] = true
		}
	}
	if got := Token(&store.Cluster{ID: 7}, "cp-2"); got != "k8sapi-cluster-7-cp-2" {
		t.Errorf("a cluster founded before migration 012: %q", got)
	}
}
