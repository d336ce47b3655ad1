package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

const encryptionConfigPath = "/etc/exk8s/apiserver/encryption-config.yaml"

var secretboxKeyRE = regexp.MustCompile(`(?m)^\s+secret: (\S+)$`)

// secretsKeyOf is the Secrets encryption key every node of a founded
// cluster is served; each node must be served the same one.
func (s *stack) secretsKeyOf(res apitypes.FoundingResult) []byte {
	s.t.Helper()
	var key []byte
	for _, vm := range res.ControlPlaneVMIDs {
		m := secretboxKeyRE.FindStringSubmatch(s.bundleFiles(vm)[encryptionConfigPath])
		if m == nil {
			s.t.Fatalf("vm %d's bundle has no secretbox key", vm)
		}
		k, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil || (key != nil && !bytes.Equal(k, key)) {
			s.t.Fatalf("vm %d is served another key than its peers (%v)", vm, err)
		}
		key = k
	}
	return key
}

// TestSecretsEncryptionKeyIsSealedPerCluster: founding makes each cluster
// a Secrets encryption key of its own. Its column never holds it in
// plaintext; it opens only under its own cluster's KMS context and only as
// the Secrets key; every node of the cluster is served the same one.
func TestSecretsEncryptionKeyIsSealedPerCluster(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c1, c2 := s.Found(1, stacktest.ThreeNodes), s.Found(1, stacktest.ThreeNodes)
	k1, k2 := s.secretsKeyOf(c1), s.secretsKeyOf(c2)
	if len(k1) != 32 || bytes.Equal(k1, k2) {
		t.Fatalf("keys of %d and %d bytes, equal %v: want 32 bytes each, different", len(k1), len(k2), bytes.Equal(k1, k2))
	}
	st := store.New(s.pool)
	row1, err := st.Cluster(ctx, 1, c1.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	sealed := row1.SecretsEncryptionKeySealed
	for _, plain := range [][]byte{k1, []byte(base64.StdEncoding.EncodeToString(k1))} {
		if len(sealed) == 0 || bytes.Contains(sealed, plain) {
			t.Fatalf("the sealed column (%d bytes) holds the key in plaintext", len(sealed))
		}
	}
	opened, err := keyring.Open(ctx, s.envelope, &row1)
	if err != nil || !bytes.Equal(opened.Trust.SecretsEncryptionKey, k1) {
		t.Fatalf("the cluster's own row does not open to its key (%v)", err)
	}

	// Another cluster's context: KMS refuses the data key.
	moved := row1
	moved.ID = c2.ClusterID
	if _, err := keyring.Open(ctx, s.envelope, &moved); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("cluster 1's data key under cluster 2's encryption context: err %v, want ErrOpen", err)
	}
	// Cluster 1's sealed key on cluster 2's row: the data key differs.
	row2, err := st.Cluster(ctx, 1, c2.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	row2.SecretsEncryptionKeySealed = sealed
	if _, err := keyring.Open(ctx, s.envelope, &row2); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("cluster 1's key on cluster 2's row: err %v, want ErrOpen", err)
	}
	// In another sealed column of its own cluster: the purpose differs.
	swapped := row1
	swapped.ServiceAccountKeySealed = sealed
	if _, err := keyring.Open(ctx, s.envelope, &swapped); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("the Secrets key opened as the service-account key: err %v, want ErrOpen", err)
	}
}

// A cluster founded before clusters had a Secrets key still renders:
// without encryption, and its API server manifest says so.
func TestClusterWithoutSecretsKeyRendersUnencrypted(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET secrets_encryption_key_sealed = NULL WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	files := s.bundleFiles(res.ControlPlaneVMIDs[0])
	manifest := files["/etc/kubernetes/manifests/kube-apiserver.yaml"]
	if _, ok := files[encryptionConfigPath]; ok || strings.Contains(manifest, "--encryption-provider-config") ||
		!strings.Contains(manifest, "stored in etcd as they come, unencrypted") {
		t.Errorf("a cluster without a key: encryption config present %v, manifest:\n%s", ok, manifest)
	}
}
