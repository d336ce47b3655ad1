package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

const oneNode = `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":1}`

type clusterPage struct {
	Clusters []struct {
		ClusterID int64  `json:"cluster_id"`
		Status    string `json:"status"`
	} `json:"clusters"`
	NextCursor *string `json:"next_cursor"`
}

func (s *stack) listClusters(query url.Values) clusterPage {
	s.t.Helper()
	r := stacktest.Do(s.t, http.MethodGet, s.api.URL+"/clusters?"+query.Encode(), "", s.Bearer(1))
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET /clusters?%s = %d %s", query.Encode(), r.Status, r.Body)
	}
	var p clusterPage
	r.JSON(s.t, &p)
	return p
}

// GET /clusters pages newest first through an opaque cursor, and filters
// by status.
func TestListClustersPagesAndFilters(t *testing.T) {
	s := newStack(t)
	for range 3 {
		s.Found(1, oneNode)
	}
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 1})
	if r := s.Create(1, oneNode); r.Status != http.StatusBadGateway {
		t.Fatalf("the failing founding = %d %s", r.Status, r.Body)
	}
	var seen []int64
	q := url.Values{"limit": {"3"}}
	for pages := 0; ; pages++ {
		p := s.listClusters(q)
		for _, c := range p.Clusters {
			seen = append(seen, c.ClusterID)
		}
		if p.NextCursor == nil {
			if pages != 1 {
				t.Errorf("%d pages of at most 3 for 4 clusters, want 2", pages+1)
			}
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	if len(seen) != 4 || seen[0] < seen[1] || seen[1] < seen[2] || seen[2] < seen[3] {
		t.Errorf("listed %v, want 4 clusters newest first", seen)
	}
	failed := s.listClusters(url.Values{"status": {"failed"}})
	if len(failed.Clusters) != 1 || failed.Clusters[0].Status != "failed" || failed.NextCursor != nil {
		t.Errorf("status=failed listed %+v", failed)
	}
}

func TestListClustersRefusesABadQuery(t *testing.T) {
	s := newStack(t)
	for _, q := range []string{"status=gone", "limit=0", "limit=201", "limit=ten", "cursor=not-ours"} {
		r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters?"+q, "", s.Bearer(1))
		if r.Status != http.StatusBadRequest || r.ErrorCode(t) != "invalid_query" {
			t.Errorf("?%s = %d %s, want 400 invalid_query", q, r.Status, r.Body)
		}
	}
}

// A listed cluster is shown as GET /clusters/{id} shows it, field for
// field: the listing reads fewer of a cluster's columns (none of its
// sealed keys) and its nodes without their identities, and must still show
// the CAs' and the leaves' expiry, the nodes and the pools.
func TestListShowsWhatGetShows(t *testing.T) {
	s := newStack(t)
	s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3}`)
	var page struct {
		Clusters []map[string]any `json:"clusters"`
	}
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1)).JSON(t, &page)
	if len(page.Clusters) != 1 {
		t.Fatalf("listed %d clusters, want 1", len(page.Clusters))
	}
	listed := page.Clusters[0]
	var got map[string]any
	stacktest.Do(t, http.MethodGet, fmt.Sprintf("%s/clusters/%v", s.api.URL, listed["cluster_id"]), "", s.Bearer(1)).JSON(t, &got)
	if !reflect.DeepEqual(listed, got) {
		t.Errorf("listed:\n%v\nGET:\n%v", listed, got)
	}
	if cas, _ := listed["cas_expire_at"].(map[string]any); len(cas) != 3 || listed["certificates_expire_at"] == nil {
		t.Errorf("the listing shows no expiry: cas %v, leaves %v", listed["cas_expire_at"], listed["certificates_expire_at"])
	}
}
