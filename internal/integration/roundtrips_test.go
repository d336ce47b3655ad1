package integration

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/metrics"
)

// A founding's database round trips, counted by the pgx tracer against
// real PostgreSQL (a batch counts as one), do not grow with its node count:
// each of its writes covers every node in one statement. The count is held
// exactly, so the figure docs/API-WALKTHROUGH.md gives stays the one measured.
func TestFoundingRoundTripsDoNotGrowWithNodes(t *testing.T) {
	s := newStack(t)
	s.servers["CreateClusterFunction"].DebugCounters = true
	trips := func(nodes int) string {
		t.Helper()
		r := s.Create(1, fmt.Sprintf(
			`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":%d}`, nodes))
		if r.Status != http.StatusCreated {
			t.Fatalf("POST /clusters (%d nodes): %d %s", nodes, r.Status, r.Body)
		}
		return r.Header.Get(metrics.HeaderDBRoundTrips)
	}
	one, three := trips(1), trips(3)
	// The token; the cluster id; the cluster and its nodes; the security
	// group asked for and recorded; the VMs asked for and recorded; their
	// addresses; their identities; activation; the DNS outcome; the admin
	// kubeconfig's issue.
	if one != "12" || three != "12" {
		t.Errorf("round trips of a founding: %s with 1 node, %s with 3; want 12 for both", one, three)
	}
}
