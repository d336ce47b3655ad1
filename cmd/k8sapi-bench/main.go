// Command k8sapi-bench is `make bench`: the Go benchmarks (benchstat,
// ECDSA P-256 against RSA-2048), a load driver against the local stack,
// a boot storm of VMs fetching their bundles and reporting their phases,
// cold starts of each function's bootstrap, and kubeadm's certs and
// kubeconfig phases side by side with founding + one bundle here. It prints
// one table and writes BENCHMARKS.md. A budget missed is a finding printed
// as FAIL, never an error exit: only a step that cannot run fails the tool.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"time"
)

type options struct {
	out        string
	count      int
	founds     int
	fetches    int
	starts     int
	kubeadmRun int
	subnet     int64
	skipGo     bool
	skipLoad   bool
	skipCold   bool
	skipKubead bool
	bringUp    string
	lifecycle  string
	// The fleet (issue 42): clusters seeded, the smaller fleet the idle
	// sweep is compared at, requests timed per read; fleetOnly runs that
	// part alone and puts its section into the existing report.
	fleet, fleetSmall, fleetSamples int
	fleetOnly                       bool
	// The boot storm (issue 42 item 2): VMs booting within a minute.
	storm int
	// costOnly runs only the cost table (make bench-cost).
	costOnly bool
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "report file")
	flag.IntVar(&o.count, "count", 6, "go test -count for the Go benchmarks (benchstat wants 6 for a confidence interval)")
	flag.IntVar(&o.founds, "founds", 20, "POST /clusters per concurrency level")
	flag.IntVar(&o.fetches, "fetches", 200, "bundle fetches per concurrency level")
	flag.IntVar(&o.starts, "starts", 20, "cold starts per function")
	flag.IntVar(&o.kubeadmRun, "side-by-side-runs", 5, "runs of each side of the kubeadm comparison")
	flag.Int64Var(&o.subnet, "subnet", 2, "simulator subnet the benchmark's clusters use (deleted after)")
	flag.BoolVar(&o.skipGo, "skip-go", false, "skip the Go benchmarks")
	flag.BoolVar(&o.skipLoad, "skip-load", false, "skip the load driver and the side-by-side")
	flag.BoolVar(&o.skipCold, "skip-cold", false, "skip cold starts and sizes")
	flag.BoolVar(&o.skipKubead, "skip-kubeadm", false, "skip kubeadm")
	flag.IntVar(&o.fleet, "fleet", 10000, "clusters in the fleet benchmark (0 skips it)")
	flag.IntVar(&o.fleetSmall, "fleet-small", 1000, "the smaller fleet the sweep with nothing due is compared at")
	flag.IntVar(&o.fleetSamples, "fleet-samples", 200, "requests timed per read at the fleet's size")
	flag.IntVar(&o.storm, "storm", 1000, "VMs in the boot storm, booting within a minute (0 skips it)")
	flag.BoolVar(&o.fleetOnly, "fleet-only", false, "run only the fleet and replace its section of the report (make bench-fleet)")
	flag.BoolVar(&o.costOnly, "cost-only", false, "run only the cost per cluster on a local stack of its own and put its table into the report (make bench-cost)")
	flag.StringVar(&o.bringUp, "bringup", "", "only put the medians of the node proof's bring-up timelines in this folder into the report (make bench-bringup)")
	flag.StringVar(&o.lifecycle, "lifecycle", "", "only put the operations the node proof timed, in the timelines in this folder, into the report (make bench-lifecycle)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench: ")
	if _, err := os.Stat("template.yaml"); err != nil {
		log.Fatal("run from the module root (make bench)")
	}
	if o.bringUp != "" {
		if err := writeBringUp(o.bringUp, o.out); err != nil {
			log.Fatal(err)
		}
		return
	}
	if o.lifecycle != "" {
		if err := writeLifecycle(o.lifecycle, o.out); err != nil {
			log.Fatal(err)
		}
		return
	}
	start := time.Now()
	r := &report{machine: machineFacts(), started: start}
	if o.costOnly {
		if err := writeCostOnly(o, r); err != nil {
			log.Fatal(err)
		}
		return
	}
	if o.fleetOnly {
		if err := writeFleetOnly(o, r); err != nil {
			log.Fatal(err)
		}
		return
	}

	if !o.skipGo {
		step("Go benchmarks", func() error { return runGoBench(o, r) })
	}
	if !o.skipCold || !o.skipLoad || o.storm > 0 {
		st, stop, err := ensureStack()
		if err != nil {
			log.Fatalf("local stack: %v", err)
		}
		r.stackNote = st.note
		if !o.skipLoad {
			step("load", func() error { return runLoad(o, st, r) })
		}
		if o.storm > 0 {
			step("boot storm", func() error { return runStorm(o, st, r) })
		}
		if !o.skipCold {
			step("cold starts", func() error { return runColdStarts(o, st, r) })
		}
		if !o.skipLoad && !o.skipKubead {
			step("kubeadm side by side", func() error { return runSideBySide(o, st, r) })
		}
		stop()
	}
	if o.fleet > 0 {
		step("fleet", func() error { return runFleet(o, r) })
	}
	r.elapsed = time.Since(start)
	r.machine.loadEnd = loadavg()
	table := r.table()
	fmt.Print(table)
	fmt.Print(r.closingLines())
	old, _ := os.ReadFile(o.out) // a first report has no old one
	if err := os.WriteFile(o.out, []byte(r.markdown()+keptSection(string(old))), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s in %s", o.out, r.elapsed.Round(time.Second))
}

// step runs one part; a part that cannot run is reported and the rest go on.
func step(name string, f func() error) {
	t := time.Now()
	log.Printf("%s ...", name)
	if err := f(); err != nil {
		log.Printf("%s FAILED: %v", name, err)
		failures = append(failures, fmt.Sprintf("%s: %v", name, err))
		return
	}
	log.Printf("%s done in %s", name, time.Since(t).Round(100*time.Millisecond))
}

var failures []string
