package pki

import (
	"testing"
	"time"
)

// A leaf is due once less than RenewBefore of its life is left, judged by
// the clock given; the configured lifetime applies to leaves, never to CAs.
func TestRenewalDueAndLeafLifetime(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	is := Issuer{Now: func() time.Time { return start }, LeafLifetime: time.Hour}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	if got := trust.CAs[ClusterCA].Cert.NotAfter; !got.Equal(start.Add(caLifetime)) {
		t.Errorf("the CA ends %v: LeafLifetime reached a CA", got)
	}
	kp, err := is.Issue(trust, APIServer, Subject{Name: "cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	if notAfter, _ := NotAfter(kp.CertPEM); !notAfter.Equal(start.Add(time.Hour)) {
		t.Errorf("the leaf ends %v, want an hour after issue", notAfter)
	}
	r := LeafSchedule{Lifetime: time.Hour, RenewBefore: 20 * time.Minute}
	for _, c := range []struct {
		at  time.Duration
		due bool
	}{{0, false}, {39 * time.Minute, false}, {40 * time.Minute, false}, {40*time.Minute + time.Second, true}, {2 * time.Hour, true}} {
		if due, err := r.Due(kp.CertPEM, start.Add(c.at)); err != nil || due != c.due {
			t.Errorf("at +%v: due %v (%v), want %v", c.at, due, err, c.due)
		}
	}
	if _, err := r.Due([]byte("not a certificate"), start); err == nil {
		t.Error("a non-certificate was judged")
	}
}
