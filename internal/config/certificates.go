package config

import (
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// minLeafLifetime keeps a leaf alive long enough for a node to fetch,
// install and use it before the next renewal is due.
const minLeafLifetime = 10 * time.Minute

// LeafSchedule is the leaf lifetime and renewal window the functions issue and
// renew with: CERT_RENEW_BEFORE, else a third of LEAF_CERT_LIFETIME.
func (c Config) LeafSchedule() pki.LeafSchedule {
	r := pki.LeafSchedule{Lifetime: c.LeafCertLifetime, RenewBefore: c.CertRenewBefore}
	if r.RenewBefore == 0 {
		r.RenewBefore = r.Lifetime / 3
	}
	return r
}

// checkRenewalWindow is the rule between the two variables, reported only
// when each parsed on its own (their own checks report the rest; a lifetime
// that did not parse is zero, since it always has a default).
func (c Config) checkRenewalWindow() error {
	if c.LeafCertLifetime > 0 && c.CertRenewBefore >= c.LeafCertLifetime {
		return errors.New("CERT_RENEW_BEFORE: must be shorter than LEAF_CERT_LIFETIME")
	}
	return nil
}
