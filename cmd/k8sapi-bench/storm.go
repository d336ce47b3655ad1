package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/simulator"
)

// The boot storm (issue 42 item 2): N VMs boot within one minute, each
// doing what a control-plane VM does against k8sapi: its IMDS proofs, its
// bundle fetch, and a status report per phase with proofs fresh from IMDS
// for each (vm_proofs in templates/exk8s-progress.sh), every call retried
// as the shell library retries it.
const (
	stormSpread = time.Minute
	// A founding has at most 3 control-plane nodes; the storm's VMs are
	// theirs (a worker's bootstrap signs certificate requests: another
	// storm).
	stormNodes = 3
	// The longest any VM of the storm may take: the shim tries its fetch
	// for 10 minutes.
	stormDeadline = 15 * time.Minute
	stormP99Goal  = 50 * time.Millisecond // a VM route's p99 (the load part's)
)

// stormPhases are the phases a control-plane node that is not its
// cluster's first reports, in order (the shim and the control-plane
// script; addons_installed is the first node's only).
var stormPhases = []clusterfacts.Phase{clusterfacts.PrerequisitesInstalled, clusterfacts.EtcdStarted,
	clusterfacts.KubeletStarted, clusterfacts.APIServerReady, clusterfacts.Ready}

// stormRun is what the storm measured.
type stormRun struct {
	vms, clusters int
	spread, took  time.Duration
	fetch, report *loadRow

	mu          sync.Mutex
	statuses    map[int]int // answers other than 2xx, by status (0: none)
	throttled   int         // 429s
	noRetryHint int         // 429s without a Retry-After
	honoured    int         // 429s whose retry waited their Retry-After
	lost        int         // VMs that gave up a call
	conns       connPeak
}

// arrivals are n VMs' start offsets spread evenly over spread: the same
// rate from the storm's first second to its last.
func arrivals(n int, spread time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = spread * time.Duration(i) / time.Duration(n)
	}
	return out
}

func runStorm(o options, st stack, r *report) error {
	c := newClient(st)
	// A VM is a client of its own: the storm's calls queue at the gateway,
	// as a real storm's do, not in this tool's connection pool.
	c.http = &http.Client{Timeout: time.Minute}
	var clusters []int64
	defer func() { deleteClusters(c, clusters) }()
	vms, err := foundStorm(o, c, &clusters)
	if err != nil {
		return err
	}
	s := &stormRun{vms: len(vms), clusters: len(clusters), spread: stormSpread, statuses: map[int]int{},
		fetch: &loadRow{what: "GET bundle"}, report: &loadRow{what: "POST status"}}
	r.storm = s
	stop, err := watchConns(st)
	if err != nil {
		return err
	}
	s.boot(c, vms)
	s.conns = stop()
	return nil
}

// foundStorm founds the storm's clusters through the API, 4 at a time,
// and gives o.storm of their VMs; each cluster is appended to clusters.
func foundStorm(o options, c *client, clusters *[]int64) ([]vmCreds, error) {
	n := (o.storm + stormNodes - 1) / stormNodes
	var mu sync.Mutex
	var vms []vmCreds
	row := drive("POST /clusters (storm)", n, 4, func(int) (sample, error) {
		f, s, err := c.found(o.subnet, stormNodes, "ecdsa-p256")
		if err == nil {
			mu.Lock()
			*clusters = append(*clusters, f.ClusterID)
			for _, vm := range f.VMIDs {
				vms = append(vms, vmCreds{vm: vm, cluster: f.ClusterID})
			}
			mu.Unlock()
		}
		return s, err
	})
	if row.errs > 0 {
		return nil, fmt.Errorf("%d of %d foundings failed", row.errs, n)
	}
	return vms[:min(len(vms), o.storm)], nil
}

// boot starts each VM at its arrival and waits for all to finish.
func (s *stormRun) boot(c *client, vms []vmCreds) {
	ctx, cancel := context.WithTimeout(context.Background(), stormDeadline)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, at := range arrivals(len(vms), s.spread) {
		time.Sleep(time.Until(start.Add(at)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.bootVM(ctx, c, vms[i]); err != nil {
				s.lose(err)
			}
		}()
	}
	wg.Wait()
	s.took = time.Since(start)
}

func (s *stormRun) lose(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == 0 {
		log.Printf("boot storm: %v", err)
	}
	s.lost++
}

// bootVM is one VM's boot: proofs, the fetch, then each phase's report
// (a report that fails does not stop the bootstrap: progress_report).
func (s *stormRun) bootVM(ctx context.Context, c *client, v vmCreds) error {
	v, err := c.credentials(v.vm, v.cluster)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/bootstrap/control-plane/%d", c.st.get("API_URL"), v.vm)
	if err := s.call(ctx, c, "boot", s.fetch, v, "GET", url, nil); err != nil {
		return err
	}
	var lost error
	for _, p := range stormPhases {
		if v, err = c.credentials(v.vm, v.cluster); err != nil {
			return err
		}
		body := fmt.Appendf(nil, `{"phase":%q,"message":""}`, p)
		if err := s.call(ctx, c, "report", s.report, v, "POST", url+"/status", body); err != nil {
			lost = err
		}
	}
	return lost
}

// call is one of v's calls under the shell library's rule for kind.
func (s *stormRun) call(ctx context.Context, c *client, kind string, row *loadRow, v vmCreds, method, url string, body []byte) error {
	rule, _ := bundle.RetryOf(kind)
	try := &retrier{rule: rule}
	hdr := map[string]string{simulator.IMDSTokenHeader: v.imds, "Authorization": "Bearer " + v.access, "Content-Type": "application/json"}
	for {
		resp, b, smp, err := c.do(method, url, body, hdr)
		a := answerOf(resp, smp.d)
		if err == nil && a.ok() {
			c.served.mark(&smp, v.cluster)
			s.sample(row, smp)
			return nil
		}
		wait, again := try.next(a)
		s.failed(a, wait, again)
		if !again {
			return fmt.Errorf("%s %s: %d %s (%v)", method, url, a.status, trim(b), err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *stormRun) sample(row *loadRow, smp sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row.n++
	row.samples = append(row.samples, smp)
}

// failed counts an answer other than 2xx and, for a 429, whether it
// carried a Retry-After and whether the wait before the retry honoured it
// (a call that gives up does not come back early).
func (s *stormRun) failed(a answer, wait time.Duration, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[a.status]++
	if a.status != http.StatusTooManyRequests {
		return
	}
	s.throttled++
	switch {
	case a.retryAfter == 0:
		s.noRetryHint++
	case !again || honours(a, wait):
		s.honoured++
	}
}
