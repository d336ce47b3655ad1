package cli

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// scaled is cluster 5 asking for count control-plane nodes, in phases.
func scaled(count int, phases ...string) apitypes.ClusterView {
	c := cluster(5, "active", "bootstrapping", phases...)
	c.ControlPlaneCount = count
	return c
}

const scalingAnswer = `{"scaling_id":2,"cluster_id":5,"from_count":1,"to_count":3,"state":"scaling","created_at":"2026-11-24T13:00:00Z"}`

func TestScaleControlPlane(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PATCH /clusters/5", reply{status: 202, body: scalingAnswer})
	runCLI(t, f, nil, "scale", "control-plane", "5", "--count", "3").wantOut(t,
		"the control plane of cluster 5 is being scaled from 1 to 3 nodes (scaling 2, scaling); follow it with: k8sapi describe cluster 5")
	if c := f.callsTo("PATCH /clusters/5"); len(c) != 1 || c[0].body != `{"control_plane_count":3}` {
		t.Errorf("scale calls %+v, want one with the count", c)
	}
	runCLI(t, newFakeAPI(t), nil, "scale", "control-plane", "5").want(t, 2) // no --count
	runCLI(t, newFakeAPI(t), nil, "scale", "control-plane", "x", "--count", "3").want(t, 2)
}

// --wait follows each new node until the count is ready.
func TestScaleControlPlaneWaitFollowsTheNewNodes(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PATCH /clusters/5", reply{status: 202, body: scalingAnswer})
	f.on("GET /clusters/5", ok(scaled(3, "ready")), ok(scaled(3, "ready", "etcd_started")), ok(scaled(3, "ready", "ready", "ready")))
	r := runCLI(t, f, nil, "scale", "control-plane", "5", "--count", "3", "--wait")
	r.want(t, 0)
	r.wantOut(t, `the control plane of cluster 5 is being scaled from 1 to 3 nodes (scaling 2, scaling)
13:00:00 1/3 control-plane nodes ready
13:00:00 1/3 control-plane nodes ready; cp-1.cluster-5.internal etcd_started
13:00:00 3/3 control-plane nodes ready
the control plane of cluster 5 has 3 nodes, every one ready`)
}

// A scaling that kept fewer nodes (the cluster records the count it has)
// ends the wait as an error.
func TestScaleControlPlaneWaitEndsOnAFailedScaling(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PATCH /clusters/5", reply{status: 202, body: scalingAnswer})
	f.on("GET /clusters/5", ok(scaled(3, "ready")), ok(scaled(1, "ready")))
	r := runCLI(t, f, nil, "scale", "control-plane", "5", "--count", "3", "--wait")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "the scaling to 3 nodes failed: the control plane kept 1") {
		t.Fatal(r.stderr)
	}
}

// --wait follows a shrink until each leaving member is retired.
func TestScaleControlPlaneWaitFollowsAShrink(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PATCH /clusters/5", reply{status: 202, body: `{"scaling_id":3,"cluster_id":5,"from_count":3,"to_count":1,"state":"scaling","created_at":"2026-11-24T13:00:00Z"}`})
	f.on("GET /clusters/5", ok(scaled(1, "ready", "ready", "ready")), ok(scaled(1, "ready", "ready")), ok(scaled(1, "ready")))
	r := runCLI(t, f, nil, "scale", "control-plane", "5", "--count", "1", "--wait")
	r.want(t, 0)
	r.wantOut(t, `the control plane of cluster 5 is being scaled from 3 to 1 nodes (scaling 3, scaling)
13:00:00 3 control-plane nodes ready, 2 to remove to reach 1
13:00:00 2 control-plane nodes ready, 1 to remove to reach 1
13:00:00 1/1 control-plane nodes ready
the control plane of cluster 5 has 1 nodes, every one ready`)
}
