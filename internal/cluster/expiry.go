package cluster

import (
	"time"

	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// expiry is when a cluster's certificates stop being valid: the earliest
// NotAfter among its nodes' stored leaves (what renewal keeps ahead of)
// and each CA's, which only CA rotation moves.
type expiry struct {
	leaves *time.Time
	cas    map[string]time.Time // by cert-table name (pki.Name)
}

func expiryOf(c *store.Cluster, nodes []store.Node) expiry {
	e := expiry{cas: map[string]time.Time{}}
	for _, name := range keyring.CANames() {
		if g, err := keyring.Current(c, string(name)); err == nil && g.NotAfter != nil {
			e.cas[string(name)] = g.NotAfter.UTC()
		}
	}
	for _, n := range nodes {
		e.leaves = earliest(e.leaves, n.Expiry.Earliest)
		for _, certPEM := range n.Expiry.UndatedCerts {
			if notAfter, err := pki.ExpiresAt([]byte(certPEM)); err == nil {
				e.leaves = earliest(e.leaves, &notAfter)
			}
		}
	}
	if e.leaves != nil {
		utc := e.leaves.UTC()
		e.leaves = &utc
	}
	return e
}

func earliest(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.Before(*a)) {
		return b
	}
	return a
}
