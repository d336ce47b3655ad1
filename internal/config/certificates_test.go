package config_test

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/pki"
)

// The lifetimes' rules, by exact text; the default window is a third.
func TestCertificateLifetimes(t *testing.T) {
	for _, c := range []struct {
		lifetime, before string
		want             pki.LeafSchedule
		err              string
	}{
		{"", "", pki.LeafSchedule{Lifetime: 8760 * time.Hour, RenewBefore: 2920 * time.Hour}, ""},
		{"1h", "59m45s", pki.LeafSchedule{Lifetime: time.Hour, RenewBefore: 59*time.Minute + 45*time.Second}, ""},
		{"30m", "", pki.LeafSchedule{Lifetime: 30 * time.Minute, RenewBefore: 10 * time.Minute}, ""},
		{"9m", "", pki.LeafSchedule{}, "LEAF_CERT_LIFETIME: must be a duration of at least 10m0s like 8760h"},
		{"a year", "", pki.LeafSchedule{}, "LEAF_CERT_LIFETIME: must be a duration of at least 10m0s like 8760h"},
		{"1h", "1h", pki.LeafSchedule{}, "CERT_RENEW_BEFORE: must be shorter than LEAF_CERT_LIFETIME"},
		{"1h", "2h", pki.LeafSchedule{}, "CERT_RENEW_BEFORE: must be shorter than LEAF_CERT_LIFETIME"},
		{"1h", "-1m", pki.LeafSchedule{}, "CERT_RENEW_BEFORE: must be a positive duration like 10s or 5m"},
		{"9m", "1h", pki.LeafSchedule{}, "LEAF_CERT_LIFETIME: must be a duration of at least 10m0s like 8760h"},
	} {
		cfg, err := config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://x@h/db", "LOCAL_RUN": "true",
			"LEAF_CERT_LIFETIME": c.lifetime, "CERT_RENEW_BEFORE": c.before}))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q/%q: err %v, want %q", c.lifetime, c.before, err, c.err)
			}
			continue
		}
		if got := cfg.LeafSchedule(); err != nil || got != c.want {
			t.Errorf("%q/%q: %+v, %v; want %+v", c.lifetime, c.before, got, err, c.want)
		}
	}
}
