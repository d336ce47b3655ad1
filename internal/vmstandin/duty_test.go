package vmstandin

import (
	"slices"
	"testing"
	"time"
)

// A ready control-plane stand-in asks for a snapshot three times in its
// first minute (so the schedule's first one does not stay pending), then
// every SnapshotEvery; it renews at once, then every RenewEvery.
func TestDutiesAskSoonThenEvery(t *testing.T) {
	p := New(Config{SnapshotEvery: 100 * time.Second, RenewEvery: time.Hour})
	defer p.Close()
	waits := func(d duty) []time.Duration {
		var out []time.Duration
		for n := range 5 {
			out = append(out, d.wait(n))
		}
		return out
	}
	s := time.Second
	if got, want := waits(p.snapshots(1, p.cfg.Log)), []time.Duration{15 * s, 15 * s, 30 * s, 100 * s, 100 * s}; !slices.Equal(got, want) {
		t.Errorf("snapshot asks wait %v, want %v", got, want)
	}
	if got, want := waits(p.renewal(1, workerRenewal, nil, p.cfg.Log)), []time.Duration{0, time.Hour, time.Hour, time.Hour, time.Hour}; !slices.Equal(got, want) {
		t.Errorf("renewals wait %v, want %v", got, want)
	}
}
