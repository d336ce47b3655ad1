package keyring_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

var cluster = store.Cluster{ID: 42, OrgID: 7, ControlPlaneDNSName: "exk8s-7-2a.k8s.example",
	ClusterDomain: "corp.example", ServiceCIDR: "10.96.0.0/12"}

// sealedNode founds one node's stored identities under a real KMS data key.
func sealedNode(t *testing.T) (*envelope.DataKey, store.Node, map[pki.Name]pki.KeyPair) {
	t.Helper()
	client, keyID := testenv.KMSKey(t)
	dk, err := envelope.New(client, keyID, nil).NewDataKey(context.Background(), keyring.Scope(&cluster))
	if err != nil {
		t.Fatal(err)
	}
	trust, err := (pki.Issuer{}).NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	n := store.Node{VMID: 101, Ordinal: 1, Name: "cp-1.cluster-42.internal", IPv4: "10.0.0.11"}
	cf, _, err := clusterfacts.FromRows(&cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := cf.CertSubject(clusterfacts.NodeOf(n))
	if err != nil {
		t.Fatal(err)
	}
	issued, err := (pki.Issuer{}).IssuePhase(trust, pki.PhaseFounding, facts)
	if err != nil {
		t.Fatal(err)
	}
	if n.Identities, err = keyring.SealIdentities(dk, n.VMID, issued); err != nil {
		t.Fatal(err)
	}
	return dk, n, issued
}

// Every stored identity of the cert table round-trips, and only for its VM.
func TestIdentitiesRoundTripByTheCertTable(t *testing.T) {
	dk, n, issued := sealedNode(t)
	if len(n.Identities) != len(pki.Names(pki.PhaseFounding)) {
		t.Fatalf("sealed %d identities, the cert table stores %d", len(n.Identities), len(pki.Names(pki.PhaseFounding)))
	}
	opened, err := keyring.OpenIdentities(dk, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range pki.Names(pki.PhaseFounding) {
		if !bytes.Equal(opened[name].KeyPEM, issued[name].KeyPEM) || !bytes.Equal(opened[name].CertPEM, issued[name].CertPEM) {
			t.Errorf("%s did not round-trip", name)
		}
	}
	n.VMID++ // the same rows under another VM: the additional data differs
	if _, err := keyring.OpenIdentities(dk, n); !errors.Is(err, envelope.ErrOpen) {
		t.Errorf("another VM's identities: err %v, want ErrOpen", err)
	}
}

// A node row lacking a stored identity does not open; sealing refuses an
// incomplete issue.
func TestMissingIdentityFailsClosed(t *testing.T) {
	dk, n, issued := sealedNode(t)
	n.Identities = n.Identities[1:]
	if _, err := keyring.OpenIdentities(dk, n); !errors.Is(err, envelope.ErrOpen) {
		t.Errorf("missing identity: err %v, want ErrOpen", err)
	}
	delete(issued, pki.APIServer)
	if _, err := keyring.SealIdentities(dk, n.VMID, issued); err == nil {
		t.Error("sealing without the apiserver identity succeeded")
	}
}

// Founding seals a Secrets encryption key with the trust; a trust without
// one is refused rather than sealed as an empty key.
func TestSealTrustRequiresTheSecretsKey(t *testing.T) {
	client, keyID := testenv.KMSKey(t)
	dk, err := envelope.New(client, keyID, nil).NewDataKey(context.Background(), keyring.Scope(&cluster))
	if err != nil {
		t.Fatal(err)
	}
	trust, err := (pki.Issuer{}).NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	c := cluster
	if err := keyring.SealTrust(dk, trust, &c); err != nil || len(c.SecretsEncryptionKeySealed) == 0 {
		t.Fatalf("sealing a founded trust: %v, %d sealed bytes", err, len(c.SecretsEncryptionKeySealed))
	}
	trust.SecretsEncryptionKey = nil
	if err := keyring.SealTrust(dk, trust, &c); err == nil {
		t.Error("a trust without a Secrets encryption key was sealed")
	}
}
