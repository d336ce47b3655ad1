package keyring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

// rotatingCluster is a founded cluster (its roots in its columns) whose
// every root has a generation 2 beside generation 1, as a rotation's
// trusting phase leaves it.
func rotatingCluster(t *testing.T) (*envelope.Envelope, *store.Cluster) {
	t.Helper()
	client, keyID := testenv.KMSKey(t)
	env := envelope.New(client, keyID, nil)
	c := cluster
	dk, err := env.NewDataKey(context.Background(), keyring.Scope(&c))
	if err != nil {
		t.Fatal(err)
	}
	c.WrappedDataKey = dk.Wrapped
	trust, err := (pki.Issuer{}).NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.SealTrust(dk, trust, &c); err != nil {
		t.Fatal(err)
	}
	for _, r := range keyring.Roots {
		next, err := keyring.NewGeneration(dk, pki.Issuer{}, r.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		c.CAGenerations = append(c.CAGenerations, keyring.GenerationOne(&c, r.ID), next)
	}
	return env, &c
}

// setState moves root's generation gen of c to state.
func setState(c *store.Cluster, root string, gen int, state string) {
	for i, g := range c.CAGenerations {
		if g.Root == root && g.Generation == gen {
			c.CAGenerations[i].State = state
		}
	}
}

// Two generations: every trust file holds both, old first; the current
// signs; once the old retires the trust files hold the new alone.
func TestTrustFilesOfTwoGenerations(t *testing.T) {
	env, c := rotatingCluster(t)
	oldCA := c.CACert
	for name, pemBytes := range keyring.CACerts(c) {
		certs, err := pki.ParseCerts(pemBytes)
		if err != nil || len(certs) != 2 || certs[0].Subject.CommonName+"-2" != certs[1].Subject.CommonName {
			t.Fatalf("%s while trusting: %d certificates (%v)", name, len(certs), err)
		}
	}
	if got := string(keyring.ServiceAccountPub(c)); got == c.ServiceAccountPub || len(got) < 2*len(c.ServiceAccountPub)-8 {
		t.Fatalf("service-account.pem while trusting holds one key:\n%s", got)
	}
	opened, err := keyring.Open(context.Background(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	if string(opened.Trust.CAs[pki.ClusterCA].CertPEM) != oldCA {
		t.Fatal("trusting: the new generation signs already")
	}

	for _, r := range keyring.Roots {
		setState(c, r.ID, 1, store.GenPrevious)
		setState(c, r.ID, 2, store.GenCurrent)
	}
	opened, err = keyring.Open(context.Background(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	if string(opened.Trust.CAs[pki.ClusterCA].CertPEM) == oldCA {
		t.Fatal("signing: the old generation still signs")
	}
	for _, r := range keyring.Roots {
		setState(c, r.ID, 1, store.GenRetired)
	}
	certs, err := pki.ParseCerts(keyring.CACerts(c)[pki.EtcdCA])
	if err != nil || len(certs) != 1 || certs[0].Subject.CommonName != "exk8s-etcd-ca-2" {
		t.Fatalf("etcd-ca.pem after the distrust: %v %v", certs, err)
	}
}

// A generation's sealed key opens as its own generation only: generation
// 2's key put where generation 1's is does not open.
func TestAGenerationsKeyOpensAsNoOther(t *testing.T) {
	env, c := rotatingCluster(t)
	for i, g := range c.CAGenerations {
		if g.Root == string(pki.ClusterCA) && g.Generation == 1 {
			c.CAGenerations[i].KeySealed = c.CAGenerations[i+1].KeySealed
		}
	}
	if _, err := keyring.Open(context.Background(), env, c); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("generation 2's key opened as generation 1's: %v", err)
	}
}
