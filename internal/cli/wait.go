package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// poll calls step every a.pollEvery until it is done, fails, or timeout
// passes.
func (a *app) poll(parent context.Context, timeout time.Duration, what string, step func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	for {
		done, err := step(ctx)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil { // Ctrl-C, not --timeout
				return &waitEnded{"interrupted waiting for " + what}
			}
			return &waitEnded{fmt.Sprintf("gave up waiting %s for %s", timeout, what)}
		case <-time.After(a.pollEvery):
		}
	}
}

// waitReady waits until the cluster's bootstrap is ready, showing each
// node's phase as it moves; a failed node or cluster ends the wait as an
// error naming why.
func (a *app) waitReady(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	view := a.progressView()
	return a.poll(ctx, timeout, fmt.Sprintf("cluster %d to be ready", id), func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, id)
		if gatewayCut(err) { // a read cut off: the next poll asks again
			return false, nil
		}
		if err != nil {
			return false, err
		}
		view.show(a.now(), cl)
		return bootstrapOver(cl)
	})
}

// bootstrapOver says whether waiting for cl is over, and how it ended.
func bootstrapOver(cl apitypes.ClusterView) (bool, error) {
	switch {
	case cl.Status == "failed":
		return true, fmt.Errorf("cluster %d (%s) failed: %s", cl.ID, cl.Name, cl.StatusReason)
	case cl.Status == "deleting" || cl.Status == "deleted":
		return true, fmt.Errorf("cluster %d (%s) is %s", cl.ID, cl.Name, cl.Status)
	case cl.Bootstrap.State == "failed":
		return true, errors.New(failedNodes(cl))
	}
	return cl.Status == "active" && cl.Bootstrap.State == "ready", nil
}

func failedNodes(cl apitypes.ClusterView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %d (%s) failed to bootstrap", cl.ID, cl.Name)
	for _, n := range cl.Bootstrap.Nodes {
		if n.Phase == "failed" {
			fmt.Fprintf(&b, "\n%s (vm %d): %s", n.NodeName, n.VMID, n.Message)
		}
	}
	return b.String()
}

// progressView shows a cluster's bootstrap as it moves.
type progressView interface {
	show(now time.Time, cl apitypes.ClusterView)
}

func (a *app) progressView() progressView {
	if a.terminal && !a.progressToStderr {
		return &liveView{w: a.stdout}
	}
	return &lineView{w: a.progressOut(), phases: map[int64]string{}}
}

// progressOut is where a wait's lines go: stdout, or stderr when stdout
// carries a document (-o json|yaml) that must stay parseable.
func (a *app) progressOut() io.Writer {
	if a.progressToStderr {
		return a.stderr
	}
	return a.stdout
}

// heartbeatEvery is how long a lineView stays quiet with nothing changing:
// off a terminal a wait must not look hung (a node's step takes minutes).
const heartbeatEvery = 30 * time.Second

// lineView prints a plain line for each change (logs, pipes, CI), and a
// heartbeat when nothing changed for heartbeatEvery.
type lineView struct {
	w      io.Writer
	state  string
	phases map[int64]string
	last   time.Time // of the last line
	since  time.Time // of the last change
}

func (v *lineView) show(now time.Time, cl apitypes.ClusterView) {
	at := now.UTC().Format(time.TimeOnly)
	changed := false
	for _, n := range cl.Bootstrap.Nodes {
		if v.phases[n.VMID] != n.Phase {
			v.phases[n.VMID] = n.Phase
			fmt.Fprintf(v.w, "%s %s (vm %d): %s\n", at, n.NodeName, n.VMID, n.Phase)
			changed = true
		}
	}
	if state := clusterState(cl); state != v.state {
		v.state = state
		fmt.Fprintf(v.w, "%s cluster %d (%s): %s\n", at, cl.ID, cl.Name, state)
		changed = true
	}
	switch {
	case changed || v.last.IsZero():
		v.last, v.since = now, now
	case now.Sub(v.last) >= heartbeatEvery:
		v.last = now
		fmt.Fprintf(v.w, "%s still waiting for cluster %d (%s): %s, no change for %s%s\n",
			at, cl.ID, cl.Name, v.state, now.Sub(v.since).Round(time.Second), unfetchedHint(cl))
	}
}

// unfetchedHint says why no node moves when none has fetched its bundle:
// most often a local stack whose VMs do not boot.
func unfetchedHint(cl apitypes.ClusterView) string {
	for _, n := range cl.Bootstrap.Nodes {
		if n.Phase != "pending" {
			return ""
		}
	}
	return " (no VM has fetched its bundle yet; under make local VMs boot only with BOOT_VMS=1)"
}

// clusterState is a cluster's status, and its bootstrap's once active.
func clusterState(cl apitypes.ClusterView) string {
	if cl.Status != "active" {
		return cl.Status
	}
	return "bootstrap " + cl.Bootstrap.State + " (" + readyNodes(cl.Bootstrap) + " nodes ready)"
}

// liveView redraws one compact block in place on a terminal.
type liveView struct {
	w     io.Writer
	lines int // lines drawn last time, to move back over
	start time.Time
}

func (v *liveView) show(now time.Time, cl apitypes.ClusterView) {
	if v.start.IsZero() {
		v.start = now
	}
	if v.lines > 0 {
		fmt.Fprintf(v.w, "\033[%dA", v.lines)
	}
	block := v.render(now, cl)
	for _, line := range block {
		fmt.Fprintf(v.w, "\033[2K%s\n", line)
	}
	v.lines = len(block)
}

func (v *liveView) render(now time.Time, cl apitypes.ClusterView) []string {
	lines := []string{fmt.Sprintf("cluster %d (%s): %s  [%s]", cl.ID, cl.Name, clusterState(cl), now.Sub(v.start).Round(time.Second))}
	for _, n := range cl.Bootstrap.Nodes {
		lines = append(lines, fmt.Sprintf("  %-3s %-28s %-24s %s", phaseMark(n.Phase), n.NodeName, n.Phase, age(now, n.UpdatedAt)))
	}
	return lines
}

// phaseMark is a glyph for where a node stands.
func phaseMark(phase string) string {
	switch phase {
	case "ready":
		return "ok"
	case "failed":
		return "!!"
	}
	return ".."
}
