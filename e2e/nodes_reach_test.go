package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// reachCheck is one thing a user's workload needs, asked through kubectl
// from the probe pod on the initial node: the output must hold want.
type reachCheck struct {
	what, want string
	args       []string
}

// reachChecks are the workloads' checks from the probe pod `from`:
// pod-to-pod to every other probe, the kubernetes Service's VIP, Service
// names through CoreDNS, and kubectl logs (every other check is an exec).
func reachChecks(from probePod, others []probePod, vip string) []reachCheck {
	exec := []string{"exec", from.name, "--", "curl", "-s", "--max-time", "2"}
	status := []string{"-o", "/dev/null", "-w", "HTTP/%{http_code}"}
	var checks []reachCheck
	for _, to := range others {
		checks = append(checks, reachCheck{fmt.Sprintf("pod %s on %s reaches pod %s on %s", from.name, from.node, to.name, to.node),
			"probe " + to.name, append(exec, fmt.Sprintf("http://%s:8080/", to.ip))})
	}
	return append(checks,
		reachCheck{"the kubernetes Service VIP answers", "HTTP/", concat(exec, "-k", status, "https://"+vip+"/version")},
		reachCheck{"kubernetes.default.svc resolves through CoreDNS and answers", "HTTP/",
			concat(exec, "-k", status, "https://kubernetes.default.svc.cluster.local/version")},
		reachCheck{"the probe Service by name", "probe ", append(exec, "http://probe:8080/")},
		reachCheck{"kubectl logs of " + from.name, "listening on 8080", []string{"logs", from.name}})
}

// concat joins argument lists and single arguments into a new list.
func concat(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

// run asks the check once.
func (c *machineCluster) run(ctx context.Context, ch reachCheck) error {
	out, err := c.kubectl(ctx, ch.args...)
	if err != nil || !strings.Contains(string(out), ch.want) {
		return fmt.Errorf("%s: want %q, got %q (%v)", ch.what, ch.want, strings.TrimSpace(string(out)), err)
	}
	return nil
}

// reachChecksNow waits until the probe runs Ready on every node and
// answers its checks.
func (c *machineCluster) reachChecksNow(ctx context.Context) ([]reachCheck, error) {
	pods, err := c.readyProbePods(ctx)
	if err != nil {
		return nil, err
	}
	vip, err := c.kubectl(ctx, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return nil, fmt.Errorf("the kubernetes Service: %v", err)
	}
	return reachChecks(pods[0], pods[1:], strings.TrimSpace(string(vip))), nil
}

// reachWatch watches, from the moment the machines boot, for the moment
// the workloads are reachable: a user's workloads are reachable when they
// are, whatever the proof is waiting on meanwhile (the userdata's end,
// the API's ready). Before, the checks ran one after another once every
// bring-up check had passed, which timed the proof as much as the product.
type reachWatch struct {
	done chan struct{}
	at   time.Time
	err  error
}

// watchReachability waits for the probe pods, then asks each check on
// its own every half second until it holds: the workloads are reachable
// when the last check first held. It gives up at the limit or when the
// run ends.
func (c *machineCluster) watchReachability(ctx context.Context, limit time.Duration) *reachWatch {
	w := &reachWatch{done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(ctx, limit)
	go func() {
		defer close(w.done)
		defer cancel()
		var checks []reachCheck
		w.err = until(ctx, func(ctx context.Context) (err error) {
			checks, err = c.reachChecksNow(ctx)
			return err
		})
		if w.err == nil {
			w.at, w.err = c.firstAllHeld(ctx, checks)
		}
	}()
	return w
}

// firstAllHeld asks every check at once, each until it holds, and
// answers when the last one first held.
func (c *machineCluster) firstAllHeld(ctx context.Context, checks []reachCheck) (time.Time, error) {
	held := make([]time.Time, len(checks))
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Go(func() {
			errs[i] = until(ctx, func(ctx context.Context) error { return c.run(ctx, ch) })
			held[i] = time.Now()
		})
	}
	wg.Wait()
	return slices.MaxFunc(held, time.Time.Compare), errors.Join(errs...)
}

// until asks check every half second, each ask bounded, until it holds
// (nil) or ctx ends (the last error).
func until(ctx context.Context, check func(context.Context) error) error {
	for {
		err := askWithin(ctx, 10*time.Second, check)
		if err == nil || ctx.Err() != nil {
			return err
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// askWithin is one bounded ask of check.
func askWithin(ctx context.Context, limit time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return check(ctx)
}

// result waits for the watch to end: the moment the workloads were
// reachable, or the last check's error.
func (w *reachWatch) result() (time.Time, error) {
	<-w.done
	return w.at, w.err
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
