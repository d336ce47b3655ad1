package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
)

// budgets are the storm's rows of the report's one table.
func (s *stormRun) budgets() []budget {
	if s == nil {
		return nil
	}
	what := fmt.Sprintf("boot storm: %d VMs of %d clusters in %s", s.vms, s.clusters, s.spread)
	f, rp := s.fetch.pct(.99), s.report.pct(.99)
	fails := s.fiveHundreds()
	bs := []budget{
		{what + ": p99 GET bundle / POST status", fmt.Sprintf("%s / %s", ms(f), ms(rp)), "≤ " + ms(stormP99Goal),
			f <= stormP99Goal && rp <= stormP99Goal},
		{what + ": answers other than 2xx, by status", s.statusList(), "0 5xx; 429 + Retry-After",
			fails == 0 && s.noRetryHint == 0 && s.lost == 0},
		{what + ": 429s whose retry waited their Retry-After (the VM's retry rule)", s.honouredText(), "all", s.honoured == s.throttled},
		{what + ": DB connections open at peak / the pools' limit (" + strings.Join(s.conns.functions, ", ") + ")",
			fmt.Sprintf("%d / %d (%d samples)", s.conns.peak, s.conns.limit, s.conns.samples), "≤ limit", s.conns.peak <= s.conns.limit},
	}
	if k := kmsOf([]*loadRow{s.fetch}); k.nCold+k.nWarm > 0 {
		bs = append(bs, budget{what + ": KMS calls per fetch, an environment's first of its cluster / warm",
			fmt.Sprintf("%d / %d (%d / %d fetches)", k.cold, k.warm, k.nCold, k.nWarm), "≤ 1 / 0", k.cold <= 1 && k.warm == 0})
	}
	return bs
}

// fiveHundreds counts the storm's 5xx answers and its calls no answer
// came to: each a failure of the budget.
func (s *stormRun) fiveHundreds() int {
	n := 0
	for status, c := range s.statuses {
		if status == 0 || status >= 500 {
			n += c
		}
	}
	return n
}

// statusList is the answers other than 2xx as "429×3, 503×1", "none" if
// there were none, and how many VMs gave up a call.
func (s *stormRun) statusList() string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(s.statuses)) {
		name := fmt.Sprint(st)
		if st == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, s.statuses[st]))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	if s.lost > 0 {
		parts = append(parts, fmt.Sprintf("%d VMs gave up a call", s.lost))
	}
	return strings.Join(parts, ", ")
}

func (s *stormRun) honouredText() string {
	if s.throttled == 0 {
		return "no 429 this run"
	}
	return fmt.Sprintf("%d of %d (%d without Retry-After)", s.honoured, s.throttled, s.noRetryHint)
}

// closingLine is the storm's line of closingLines.
func (s *stormRun) closingLine() string {
	if s == nil {
		return "fleet: boot storm of 1000 VMs: not measured this run\n"
	}
	all := &loadRow{samples: append(append([]sample{}, s.fetch.samples...), s.report.samples...)}
	return fmt.Sprintf("fleet: boot storm of %d VMs: p99 %.1f ms, %d 5xx\n", s.vms, msF(all.pct(.99)), s.fiveHundreds())
}

func (r *report) stormSection(p printf) {
	s := r.storm
	if s == nil {
		return
	}
	p("\n## 6. A boot storm\n\n")
	p("%d control-plane VMs of %d clusters (founded through the API first, %d nodes each) boot within %s, arrivals spread evenly, through the local gateway (each function in up to %d execution environments, `lambdaruntime.Fleet`), in %s. ",
		s.vms, s.clusters, stormNodes, s.spread, lambdaruntime.MaxEnvironments, s.took.Round(time.Second))
	p("Each VM does what the shim and its scripts do: an IMDS session and access token, its bundle fetch, then one status report per phase (%s), each with proofs fresh from IMDS; ", phaseList())
	p("each call is retried as the shell library retries its kind (`bundle.RetryOf`: the fetch every 5 s whatever the answer's Retry-After, a report by curl's `--retry`, which waits the longer of its delay and Retry-After).\n\n")
	p("| route | n | p50 | p99 |\n|---|---|---|---|\n")
	for _, l := range []*loadRow{s.fetch, s.report} {
		p("| %s | %d | %s | %s |\n", l.what, len(l.samples), ms(l.pct(.5)), ms(l.pct(.99)))
	}
	p("\nAnswers other than 2xx: %s. 429s honoured: %s. Database connections of %s at peak: %d of %d.\n",
		s.statusList(), s.honouredText(), strings.Join(s.conns.functions, ", "), s.conns.peak, s.conns.limit)
}

func phaseList() string {
	out := make([]string, len(stormPhases))
	for i, p := range stormPhases {
		out[i] = string(p)
	}
	return strings.Join(out, ", ")
}
