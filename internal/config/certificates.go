package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// minLeafLifetime keeps a leaf alive long enough for a node to fetch,
// install and use it before the next renewal is due.
const minLeafLifetime = 10 * time.Minute

func checkLeafLifetime(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < minLeafLifetime {
		return fmt.Errorf("must be a duration of at least %s like 8760h", minLeafLifetime)
	}
	return nil
}

// LeafSchedule is the leaf lifetime and renewal window the functions issue and
// renew with. Each variable's own check has already reported a value that
// does not parse; this adds the rule between the two.
func (c Config) LeafSchedule() (pki.LeafSchedule, error) {
	lifetime, err := time.ParseDuration(c.LeafCertLifetime)
	if err != nil || checkLeafLifetime(c.LeafCertLifetime) != nil {
		return pki.LeafSchedule{}, errors.New("LEAF_CERT_LIFETIME: not a usable lifetime")
	}
	r := pki.LeafSchedule{Lifetime: lifetime, RenewBefore: lifetime / 3}
	if c.CertRenewBefore == "" {
		return r, nil
	}
	if r.RenewBefore, err = time.ParseDuration(c.CertRenewBefore); err != nil || r.RenewBefore <= 0 {
		return pki.LeafSchedule{}, errors.New("CERT_RENEW_BEFORE: not a usable duration")
	}
	if r.RenewBefore >= r.Lifetime {
		return pki.LeafSchedule{}, errRenewBeforeTooLong
	}
	return r, nil
}

var errRenewBeforeTooLong = errors.New("CERT_RENEW_BEFORE: must be shorter than LEAF_CERT_LIFETIME")

// checkRenewalWindow is the rule between the two variables, reported only
// when each parses on its own (their own checks report the rest).
func (c Config) checkRenewalWindow() error {
	if _, err := c.LeafSchedule(); errors.Is(err, errRenewBeforeTooLong) {
		return err
	}
	return nil
}
