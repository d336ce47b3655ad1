package faultinjection

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/cli"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// A replacement has a state in GET /clusters/{id} from the moment it is
// asked for until after it ends, and `k8sapi wait replacement` follows it.
func TestReplacementShowsInTheCluster(t *testing.T) {
	s := newStack(t)
	id, vms := s.replacing()
	r := s.newestReplacement(id)
	if r.State != "replacing" || r.OldVMID != vms[0] || r.NewNodeName == "" {
		t.Fatalf("while replacing: %+v", r)
	}
	if rep := s.finishReplacement(); rep.Replaced != 1 {
		t.Fatalf("reconciler: %+v", rep)
	}
	if r := s.newestReplacement(id); r.State != "done" {
		t.Fatalf("after: %+v", r)
	}
	code := cli.Main([]string{"--url", s.APIURL, "--token", s.Token(1), "wait", "replacement", strconv.FormatInt(id, 10)}, &discard{}, &discard{})
	if code != 0 {
		t.Fatalf("k8sapi wait replacement of a done one: exit %d", code)
	}
}

func (s *stack) newestReplacement(id int64) apitypes.NodeReplacement {
	s.t.Helper()
	var v apitypes.ClusterView
	stacktest.Do(s.t, http.MethodGet, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1)).JSON(s.t, &v)
	if len(v.Replacements) == 0 {
		s.t.Fatal("GET /clusters/{id} shows no replacement")
	}
	return v.Replacements[0]
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
