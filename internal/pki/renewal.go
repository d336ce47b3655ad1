package pki

import (
	"fmt"
	"time"
)

// Renewal is when a stored leaf is re-issued: once less than RenewBefore of
// its life is left. Lifetime is how long a leaf issued now lives.
type Renewal struct {
	Lifetime    time.Duration
	RenewBefore time.Duration
}

// DefaultRenewal is a year's leaves renewed in their last third.
func DefaultRenewal() Renewal {
	return Renewal{Lifetime: DefaultLeafLifetime, RenewBefore: DefaultLeafLifetime / 3}
}

// Due says whether a leaf with certificate certPEM must be re-issued at now.
func (r Renewal) Due(certPEM []byte, now time.Time) (bool, error) {
	notAfter, err := NotAfter(certPEM)
	if err != nil {
		return false, err
	}
	return notAfter.Sub(now) < r.RenewBefore, nil
}

// NotAfter is the end of the validity of the certificate in certPEM.
func NotAfter(certPEM []byte) (time.Time, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading a certificate's expiry: %w", err)
	}
	return cert.NotAfter, nil
}
