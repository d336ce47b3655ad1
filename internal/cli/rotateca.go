package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

// rotateCACommand starts (or aborts) a cluster's CA rotation and may wait
// for its end, showing each phase and the nodes it waits for.
func (a *app) rotateCACommand() *cobra.Command {
	var roots []string
	var wait, abort bool
	var timeout time.Duration
	cmd := a.clusterCommand("rotate-ca ID [--roots cluster,etcd,front-proxy,service-account]",
		"Rotate a cluster's roots of trust: trust old and new, sign with the new, distrust the old",
		func(ctx context.Context, c *Client, id int64) error {
			r, err := c.RotateCA(ctx, id, roots, abort)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "CA rotation %d of cluster %d (%s) is %s\n", r.ID, id, strings.Join(r.Roots, ", "), r.Phase)
			if !wait {
				fmt.Fprintf(a.stdout, "follow it with: k8sapi describe cluster %d\n", id)
				return nil
			}
			return a.waitRotated(ctx, c, id, timeout)
		})
	cmd.Example = "  k8sapi rotate-ca 7 --wait\n  k8sapi rotate-ca 7 --roots cluster,service-account\n  k8sapi rotate-ca 7 --abort"
	cmd.Flags().StringSliceVar(&roots, "roots", nil, "the roots to rotate (default all): cluster, etcd, front-proxy, service-account")
	cmd.Flags().BoolVar(&abort, "abort", false, "turn the live rotation back instead (before its distrust)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the rotation ends, showing each phase and what it waits for")
	cmd.Flags().DurationVar(&timeout, "timeout", 8*24*time.Hour, "how long --wait waits (the distrust waits out the longest token lifetime)")
	return cmd
}

// waitRotated waits until cluster id's rotation ends, printing each phase
// and reason it passes; an aborted rotation ends it with an error.
func (a *app) waitRotated(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	last := ""
	return a.poll(ctx, timeout, "the CA rotation's end", func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, id)
		if err != nil || cl.CARotation == nil {
			return false, err
		}
		r := cl.CARotation
		if state := rotationLine(r); state != last {
			last = state
			fmt.Fprintf(a.stdout, "%s %s\n", a.now().UTC().Format(time.TimeOnly), state)
		}
		if r.EndedAt != nil && r.Phase != "done" {
			return true, fmt.Errorf("the CA rotation ended %s: %s", r.Phase, orNone(r.Message))
		}
		return r.EndedAt != nil, nil
	})
}

// rotationLine is one line of where a rotation stands.
func rotationLine(r *apitypes.CARotation) string {
	line := r.Phase + " (" + r.Reason + ")"
	if r.Message != "" {
		line += ": " + r.Message
	}
	return line
}

// RotateCA asks for a rotation of roots (none: all) of cluster id, or
// aborts its live one (202: recorded).
func (c *Client) RotateCA(ctx context.Context, id int64, roots []string, abort bool) (apitypes.CARotation, error) {
	var r apitypes.CARotation
	req := request{Method: http.MethodPost, Path: clusterPath(id) + "/rotate-ca", Body: apitypes.RotateCARequest{Roots: roots}}
	if abort {
		req = request{Method: http.MethodPost, Path: clusterPath(id) + "/rotate-ca/abort"}
	}
	_, err := c.call(ctx, req, &r)
	return r, err
}

// caRotation describes the roots' generations and the latest rotation,
// with the phase each node applied.
func (d *describer) caRotation(cl apitypes.ClusterView) {
	fmt.Fprintln(d.w, "Roots of trust:")
	for _, root := range cl.CARoots {
		var gens []string
		for _, g := range root.Generations {
			gens = append(gens, fmt.Sprintf("%d %s", g.Generation, g.State))
		}
		d.field(1, root.Root, strings.Join(gens, ", "))
	}
	r := cl.CARotation
	if r == nil {
		return
	}
	d.field(0, "CA rotation", fmt.Sprintf("%d (%s): %s", r.ID, strings.Join(r.Roots, ", "), rotationLine(r)))
	for _, n := range r.Nodes {
		d.field(1, n.Name, orNone(n.AppliedPhase))
	}
}
