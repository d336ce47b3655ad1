package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
)

type machine struct {
	cpu, cores, goVersion, osArch, kernel string
	loadStart, loadEnd                    string // /proc/loadavg: other work on the machine skews every figure
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func machineFacts() machine {
	m := machine{cpu: "unknown", cores: fmt.Sprint(runtime.NumCPU()), osArch: runtime.GOOS + "/" + runtime.GOARCH, loadStart: loadavg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.goVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	return m
}

type report struct {
	machine      machine
	started      time.Time
	elapsed      time.Duration
	stackNote    string
	goBench      map[string]*goBench
	benchstat    string
	load         []*loadRow
	firstFetch   *loadRow
	cold         []coldRow
	coldArch     string
	side         []sideRow
	kubeadmBuild time.Duration
	notes        []string
	fleet        *fleetRun
	storm        *stormRun
	cost         *costRun
}

type budget struct {
	what, measured, limit string
	pass                  bool
}

const mib = 1 << 20

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func msf(ns float64) string     { return fmt.Sprintf("%.3f ms", ns/1e6) }

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

func (r *report) loadRow(what string, conc int) *loadRow {
	for _, l := range r.load {
		if l.what == what && l.conc == conc {
			return l
		}
	}
	return nil
}

func (r *report) budgets() []budget {
	var bs []budget
	if b := r.goBench["Bundle"]; b != nil {
		e, rsa := median(b.nsPerOp["ecdsa-p256"]), median(b.nsPerOp["rsa-2048"])
		bs = append(bs, budget{"one bundle rendered, CPU only, ECDSA (median of go test -count)", msf(e), "≤ 2 ms", e <= 2e6})
		if e > 0 && rsa > 0 {
			bs = append(bs, budget{"one bundle rendered, CPU only, RSA-2048 (contrast)", fmt.Sprintf("%s (%.0f× ECDSA)", msf(rsa), rsa/e), "shown, expect ~100×", true})
		}
	}
	if l := r.loadRow("GET bundle (warm, ECDSA)", 8); l != nil {
		bs = append(bs, budget{"get-bundle via the gateway, warm, concurrency 8: p50", ms(l.pct(.5)), "≤ 15 ms", l.pct(.5) <= 15*time.Millisecond && l.errs == 0})
		bs = append(bs, budget{"get-bundle via the gateway, warm, concurrency 8: p99", ms(l.pct(.99)), "≤ 50 ms", l.pct(.99) <= 50*time.Millisecond && l.errs == 0})
		if _, hi, _, ok := r.allFetchCounts(false); ok {
			first := hi
			if r.firstFetch != nil {
				_, first, _, _ = r.firstFetch.counts(false)
			}
			bs = append(bs, budget{"DB round trips per fetch: a VM's first / a later one", fmt.Sprintf("%d / %d", first, hi),
				"≤ 3 / 3", first <= 3 && hi <= 3})
		}
		if k := r.fetchKMS(); k.nWarm > 0 {
			bs = append(bs, budget{"KMS calls per fetch: an environment's first of its cluster / warm (an environment that served the cluster before)",
				fmt.Sprintf("%d / %d (%d / %d fetches)", k.cold, k.warm, k.nCold, k.nWarm), "≤ 1 / 0", k.cold <= 1 && k.warm == 0})
		}
	}
	if r.firstFetch != nil {
		l := r.firstFetch
		bs = append(bs, budget{"get-bundle via the gateway, first fetch of each VM: p50", ms(l.pct(.5)), "≤ 10 ms", l.pct(.5) <= 10*time.Millisecond && l.errs == 0})
	}
	if l := r.loadRow("POST /clusters (3 nodes, ECDSA)", 1); l != nil {
		bs = append(bs, budget{"POST /clusters (3 nodes) via the gateway, concurrency 1: p50", ms(l.pct(.5)), "≤ 30 ms", l.pct(.5) <= 30*time.Millisecond && l.errs == 0})
	}
	for _, c := range r.cold {
		bs = append(bs, budget{"init duration " + c.logicalID + " (median of " + fmt.Sprint(len(c.inits)) + ")", ms(c.median()), "≤ 30 ms", c.median() <= 30*time.Millisecond})
	}
	for _, c := range r.cold {
		bs = append(bs, budget{"bootstrap size " + c.logicalID + " (linux/arm64, stripped)", fmt.Sprintf("%.1f MiB", float64(c.arm64Size)/mib), "≤ 12 MiB", c.arm64Size <= 12*mib})
	}
	for _, s := range r.side {
		k, o := medianD(s.kubeadm), medianD(s.ours)
		if o == 0 {
			continue
		}
		ratio := float64(k) / float64(o)
		if s.alg == "ecdsa-p256" {
			bs = append(bs, budget{"founding + one bundle (1 node) vs kubeadm certs+kubeconfig, ECDSA", fmt.Sprintf("%s vs %s: %.1f× less", ms(o), ms(k), ratio), "≥ 10× less", ratio >= 10})
		} else {
			bs = append(bs, budget{"founding + one bundle (1 node) vs kubeadm certs+kubeconfig, RSA-2048", fmt.Sprintf("%s vs %s: %.1f×", ms(o), ms(k), ratio), "shown", true})
		}
	}
	return append(append(bs, r.storm.budgets()...), r.fleet.budgets()...)
}

// fetchKMS is the most KMS calls a bundle fetch made: of the fetches
// an execution environment answered first for their cluster (its data-key
// cache cannot hold the key yet), and of the warm ones (sample.warm), with
// how many of each there were.
type fetchKMS struct {
	cold, warm   int
	nCold, nWarm int
}

func (r *report) fetchKMS() fetchKMS {
	var fetches []*loadRow
	for _, l := range append([]*loadRow{r.firstFetch}, r.load...) {
		if l != nil && strings.HasPrefix(l.what, "GET bundle") {
			fetches = append(fetches, l)
		}
	}
	return kmsOf(fetches)
}

// kmsOf is fetchKMS of the fetches in rows.
func kmsOf(rows []*loadRow) fetchKMS {
	var k fetchKMS
	for _, l := range rows {
		for _, s := range l.samples {
			switch {
			case !s.haveCounters:
			case s.warm:
				k.warm, k.nWarm = max(k.warm, s.kms), k.nWarm+1
			default:
				k.cold, k.nCold = max(k.cold, s.kms), k.nCold+1
			}
		}
	}
	return k
}

// allFetchCounts merges the warm ECDSA fetch rows.
func (r *report) allFetchCounts(kms bool) (lo, hi int, mean float64, ok bool) {
	merged := &loadRow{}
	for _, l := range r.load {
		if l.what == "GET bundle (warm, ECDSA)" {
			merged.samples = append(merged.samples, l.samples...)
		}
	}
	return merged.counts(kms)
}

func medianD(ds []time.Duration) time.Duration {
	return coldRow{inits: ds}.median()
}

// table is the one table printed at the end: every budget, pass or fail.
func (r *report) table() string {
	var b strings.Builder
	bs := r.budgets()
	w := 0
	for _, x := range bs {
		w = max(w, len([]rune(x.what)))
	}
	fmt.Fprintf(&b, "\n%-*s  %-28s  %-20s  %s\n", w, "measure", "result", "budget", "")
	for _, x := range bs {
		fmt.Fprintf(&b, "%-*s  %-28s  %-20s  %s\n", w+len(x.what)-len([]rune(x.what)), x.what, x.measured, x.limit, passFail(x.pass))
	}
	for _, f := range failures {
		fmt.Fprintf(&b, "NOT RUN: %s\n", f)
	}
	return b.String()
}

// markdown is BENCHMARKS.md: the header and budgets, then one section per
// part of the run, each left out when that part did not run.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	for _, section := range []func(printf){r.headerSection, r.goBenchSection, r.loadSection, r.coldSection, r.sideSection, r.fleetSection, r.stormSection, r.findingsSection} {
		section(p)
	}
	return b.String()
}

// printf appends to the document being written.
type printf func(format string, a ...any)

func (r *report) headerSection(p printf) {
	p("# Benchmarks\n\n")
	p("Written by `make bench` (cmd/k8sapi-bench) on %s in %s. Each budget is a target the project holds itself to; a FAIL is a finding to fix, not a test failure.\n\n",
		r.started.UTC().Format("2006-01-02"), r.elapsed.Round(time.Second))
	p("Machine: %s, %s cores, %s, %s, kernel %s. Load average (1, 5, 15 min) at start %s, at end %s: other work on the machine skews every figure.\n\n",
		r.machine.cpu, r.machine.cores, r.machine.osArch, r.machine.goVersion, r.machine.kernel, r.machine.loadStart, r.machine.loadEnd)

	p("## Budgets\n\n| measure | result | budget | |\n|---|---|---|---|\n")
	for _, x := range r.budgets() {
		p("| %s | %s | %s | %s |\n", x.what, x.measured, x.limit, passFail(x.pass))
	}
	for _, f := range failures {
		p("\nNot run: %s\n", f)
	}
}

func (r *report) goBenchSection(p printf) {
	if len(r.goBench) == 0 {
		return
	}
	p("\n## 1. Go benchmarks (CPU only)\n\n`go test -bench . -count N ./bench/gobench`, compared by algorithm with `benchstat -col /alg`. ")
	p("`Bundle` is one fetch after auth and the topology query: open the sealed CA and node keys (data key cached), mint every fetch-phase client certificate fresh (`pki.Issuer.IssuePhase`) and render every template (`bundle.Renderer.Render`). ")
	p("`FoundTrust` is `pki.Issuer.NewTrust` plus the etcd peer and API server serving certificates of 3 nodes, sealing excluded. `SealOpen` seals and opens one private key PEM under a cluster data key (AES-256-GCM, no KMS).\n\n")
	p("| benchmark | ECDSA P-256 (median) | RSA-2048 (median) | RSA / ECDSA |\n|---|---|---|---|\n")
	for _, name := range []string{"Bundle", "FoundTrust", "SealOpen"} {
		g := r.goBench[name]
		if g == nil {
			continue
		}
		e, rs := median(g.nsPerOp["ecdsa-p256"]), median(g.nsPerOp["rsa-2048"])
		p("| %s | %s | %s | %.1f× |\n", name, msf(e), msf(rs), rs/e)
	}
	p("\n```\n%s\n```\n", r.benchstat)
}

func (r *report) loadSection(p printf) {
	if len(r.load) == 0 {
		return
	}
	p("\n## 2. Load through the local gateway\n\n")
	p("Real function binaries behind the local API Gateway and Runtime API (`make local`: %s), real PostgreSQL, moto for KMS, the simulator for compute. ", r.stackNote)
	p("Counts come from the functions themselves (`internal/metrics`: a pgx tracer and a KMS middleware, sent as `X-Debug-DB-Round-Trips` / `X-Debug-KMS-Calls` with `K8SAPI_DEBUG_COUNTERS=1`, and always as `db_round_trips` / `kms_calls` on the access-log line).\n\n")
	p("**The local gateway runs each function in up to %d execution environments** (`lambdaruntime.Fleet`), as Lambda scales it: a request takes an idle one or starts another, one invocation in flight each, so concurrency 8 queues at the gateway. Each environment is a process with its own cold start and data-key cache: a fetch is counted warm only when the environment that answered (`X-Debug-Environment`) had served a fetch of that cluster before; a new environment's first fetch of a cluster opens its data key with one KMS Decrypt, as a new Lambda container would.\n\n", lambdaruntime.MaxEnvironments)
	p("| request | concurrency | n | errors | req/s | p50 | p95 | p99 | DB round trips (min–max) | KMS calls (min–max) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	rows := append([]*loadRow{}, r.load...)
	if r.firstFetch != nil {
		rows = append(rows, r.firstFetch)
	}
	for _, l := range rows {
		dlo, dhi, _, ok := l.counts(false)
		klo, khi, _, _ := l.counts(true)
		dbs, kmss := "—", "—"
		if ok {
			dbs, kmss = fmt.Sprintf("%d–%d", dlo, dhi), fmt.Sprintf("%d–%d", klo, khi)
		}
		p("| %s | %d | %d | %d | %.1f | %s | %s | %s | %s | %s |\n", l.what, l.conc, l.n, l.errs, l.throughput(), ms(l.pct(.5)), ms(l.pct(.95)), ms(l.pct(.99)), dbs, kmss)
	}
	p("\nA bundle fetch's DB round trips (a pgx batch counts as one): 1 for the proofs and the VM's call count (both token lookups and the guarded count in one batch), 1 for the topology (`store.TopologyForVM`: cluster and nodes in one batch) and 1 for the fetch's writes (its record, and on a node's first fetch also its window's identities and `bundle_fetched`, in one batch): 3 on every fetch. A founding's do not grow with its nodes: 12 for 1 node or 3 (`TestFoundingRoundTripsDoNotGrowWithNodes`). ")
	p("Its KMS calls: one Decrypt of the cluster's data key on a cold container, none while the unwrapped data key is cached (`envelope.Cache`: at most 5 minutes and 1000 uses per key, as the AWS Encryption SDK's caching materials manager bounds it; the price is that a warm container holds a cluster's data key in memory for that long). ")
	p("Each founding makes one KMS GenerateDataKey.\n")
}

func (r *report) coldSection(p printf) {
	if len(r.cold) == 0 {
		return
	}
	p("\n## 3. Cold start and binary size\n\n")
	p("Init duration: from exec of each function's `bootstrap` to its first Runtime API `GET .../invocation/next` (a fake Runtime API in the bench tool), median of the starts after one uncounted start; built with the Lambda flags for this machine (%s) so it runs here. Size: the Makefile's `build-<LogicalId>` target (linux/arm64, static, stripped).\n\n", r.coldArch)
	p("| function | init median | init min | init max | bootstrap size (linux/arm64) |\n|---|---|---|---|---|\n")
	for _, c := range r.cold {
		lo, hi := c.inits[0], c.inits[0]
		for _, d := range c.inits {
			lo, hi = min(lo, d), max(hi, d)
		}
		p("| %s | %s | %s | %s | %.1f MiB (%d bytes) |\n", c.logicalID, ms(c.median()), ms(lo), ms(hi), float64(c.arm64Size)/mib, c.arm64Size)
	}
}

func (r *report) sideSection(p printf) {
	if len(r.side) == 0 {
		return
	}
	p("\n## 4. Side by side with kubeadm\n\n")
	p("kubeadm %s built from k8s.io/kubernetes in its own module (`bench/kubeadm`; build or relink this run: %s), running `kubeadm init phase certs all` then `kubeadm init phase kubeconfig all` for one node in a fresh temp dir (`certificatesDir` and `--kubeconfig-dir`; `encryptionAlgorithm` in ClusterConfiguration v1beta4), process start included. ", kubeadmVersion, r.kubeadmBuild.Round(100*time.Millisecond))
	p("Here, in the same run, alternating with it: `POST /clusters` for one node plus that VM's one `GET /bootstrap/control-plane/{vm_id}` through the local gateway (the VM's IMDS requests to the simulator, for its session and access tokens, are not counted). Medians of the runs.\n\n")
	p("| algorithm | kubeadm certs + kubeconfig | k8sapi founding + one bundle | kubeadm / k8sapi |\n|---|---|---|---|\n")
	for _, s := range r.side {
		k, o := medianD(s.kubeadm), medianD(s.ours)
		p("| %s | %s | %s | %.1f× |\n", s.alg, ms(k), ms(o), float64(k)/float64(o))
	}
	p("\nkubeadm writes more than it signs fresh here (it also writes the etcd server and healthcheck certs and a super-admin kubeconfig); k8sapi's side also talks to Postgres, KMS (moto) and the compute simulator over HTTP. Both are the work a user waits for.\n")
}

func (r *report) fleetSection(p printf) { r.fleet.section(p) }

func (r *report) findingsSection(p printf) {
	if len(r.notes) == 0 && len(r.findings()) == 0 {
		return
	}
	p("\n## Findings\n\n")
	for _, f := range r.findings() {
		p("- %s\n", f)
	}
	for _, n := range r.notes {
		p("- %s\n", n)
	}
}

func (r *report) findings() []string {
	var out []string
	for _, x := range r.budgets() {
		if !x.pass {
			out = append(out, fmt.Sprintf("Missed: %s: %s against %s.", x.what, x.measured, x.limit))
		}
	}
	return out
}

// keptHeading starts the report's one section this tool does not measure:
// the node proof's figures (make e2e boots a cluster of real machines,
// minutes of work no benchmark run repeats), written from its output.
const keptHeading = "## Time to a working cluster"

// fleetHistoryHeading starts the fleet's before-and-after record: what a
// change to the store's statements or indexes did, measured once on both
// sides and written by hand, which no later run can measure again.
const fleetHistoryHeading = "## A fleet: before and after"

// keptSection is those sections of the old report, to be carried into the
// new one unchanged, or "" if the old report has none.
func keptSection(old string) string {
	var out string
	for _, h := range []string{fleetHistoryHeading, keptHeading} {
		out += sectionOf(old, h)
	}
	return out
}

// sectionOf is the section of doc under heading, or "".
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, heading)
	if i < 0 {
		return ""
	}
	section := doc[i:]
	if j := strings.Index(section[len(heading):], "\n## "); j >= 0 {
		section = section[:len(heading)+j]
	}
	return "\n" + strings.TrimRight(section, "\n") + "\n"
}
