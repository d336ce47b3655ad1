package main

import (
	"strings"
	"testing"
	"time"
)

// The node proof's section survives a new report; nothing else of the old
// one does.
func TestKeptSection(t *testing.T) {
	cases := map[string]string{
		"# Benchmarks\n\n## Budgets\nold\n":                                    "",
		"# B\n\n## Time to a working cluster\n\nfigures\n":                     "\n## Time to a working cluster\n\nfigures\n",
		"# B\n\n## Time to a working cluster\n\nfigures\n\n## Later\nold\n":    "\n## Time to a working cluster\n\nfigures\n",
		"# B\n## 1. Go\nx\n## Time to a working cluster\nfig\n| a | b |\n\n\n": "\n## Time to a working cluster\nfig\n| a | b |\n",
	}
	for old, want := range cases {
		if got := keptSection(old); got != want {
			t.Errorf("keptSection(%q) = %q, want %q", old, got, want)
		}
	}
}

// The bring-up medians go into their marked block, which replaces the old
// one; without one, the block ends the kept section; phases are ordered
// by their median, and a phase some run lacks is left out.
func TestBringUpBlock(t *testing.T) {
	runs := []bringUpRun{run(10, "every node Ready", 40, "workloads reachable", 50, "only here", 1),
		run(20, "every node Ready", 60, "workloads reachable", 55), run(30, "every node Ready", 45, "workloads reachable", 70)}
	block := bringUpBlock(runs)
	for _, want := range []string{"Median of 3 bring-ups", "set-up (median 20.0 s)", "| every node Ready | 45.0 s | 40.0 | 60.0 | 45.0 |", "| workloads reachable | 55.0 s |"} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "only here") || strings.Index(block, "every node Ready") > strings.Index(block, "workloads reachable") {
		t.Errorf("a phase not in every run is kept, or the order is not the medians':\n%s", block)
	}
	first, err := withBlock("# B\n\n## Time to a working cluster\n\nfigures\n\n## Later\nx\n", block, bringUpBegin, bringUpEnd)
	if err != nil || !strings.Contains(first, "figures\n\n"+block+"\n\n## Later") {
		t.Fatalf("first block: %v\n%s", err, first)
	}
	again, err := withBlock(first, "NEW", bringUpBegin, bringUpEnd)
	if err != nil || strings.Contains(again, "Median of") || !strings.Contains(again, "figures\n\nNEW\n\n## Later") {
		t.Errorf("the old block is not replaced: %v\n%s", err, again)
	}
	if _, err := withBlock("# B\n", block, bringUpBegin, bringUpEnd); err == nil {
		t.Error("a report without the kept section took the block")
	}
}

func run(setUp float64, phaseSeconds ...any) bringUpRun {
	r := bringUpRun{Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), SetUpSeconds: setUp}
	for i := 0; i < len(phaseSeconds); i += 2 {
		r.Phases = append(r.Phases, phaseTime{phaseSeconds[i].(string), float64(phaseSeconds[i+1].(int))})
	}
	return r
}

// A fetch is warm only when its environment served its cluster before: a
// new environment's first fetch of a cluster, which must unwrap the data
// key, counts as cold however many fetches came before it elsewhere.
func TestWarmFetchIsPerEnvironmentAndCluster(t *testing.T) {
	var w served
	fetches := []struct {
		env     string
		cluster int64
		kms     int
	}{{"a", 1, 1}, {"a", 1, 0}, {"b", 1, 1}, {"a", 2, 1}, {"b", 1, 0}, {"", 1, 1}}
	row := &loadRow{what: "GET bundle (warm, ECDSA)"}
	for _, f := range fetches {
		s := sample{env: f.env, kms: f.kms, haveCounters: true}
		w.mark(&s, f.cluster)
		row.samples = append(row.samples, s)
	}
	got := (&report{load: []*loadRow{row}}).fetchKMS()
	if want := (fetchKMS{cold: 1, warm: 0, nCold: 4, nWarm: 2}); got != want {
		t.Errorf("fetchKMS = %+v, want %+v", got, want)
	}
}

func TestLifecycleBlock(t *testing.T) {
	a, b := run(20), run(20)
	a.Operations = []phaseTime{{"control plane 3 → 5", 150}, {"worker: crash to its replacement Ready", 200}, {"control plane 5 → 3", 90}}
	b.Operations = []phaseTime{{"control plane 3 → 5", 170}}
	block, err := lifecycleBlock([]bringUpRun{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| control plane 3 → 5 | 160 s | 2 | 180 s (", ") | PASS |", "| worker: crash to its replacement Ready | 200 s | 1 | 180 s (", ") | FAIL |", "| control plane 5 → 3 | 90 s | 1 | none set |  |"} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
	if _, err := lifecycleBlock([]bringUpRun{run(20)}); err == nil {
		t.Error("runs that timed no operation made a block")
	}
}
