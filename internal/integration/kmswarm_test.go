package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/testenv"
)

// A warm environment's bundle fetches ask KMS nothing: the first fetch of
// a cluster opens its data key (one Decrypt), every later one of any of
// its nodes finds it in the environment's data-key cache, as the
// functions' wiring builds it (internal/wiring: 5 minutes, 1000 uses).
func TestWarmFetchAsksKMSNothing(t *testing.T) {
	kmsClient, keyID := testenv.KMSKey(t)
	cached := envelope.New(metrics.CountKMS(kmsClient), keyID, envelope.NewCache(5*time.Minute, 1000, 256))
	s := newStack(t, func(c *stacktest.Config) { c.Envelope = cached })
	s.servers["GetBundleFunction"].DebugCounters = true
	res := s.Found(1, stacktest.ThreeNodes)
	var calls []string
	for i := range 6 {
		vm := s.proof(res.ControlPlaneVMIDs[i%len(res.ControlPlaneVMIDs)])
		r := s.FetchBundle(vm.id, vm.imds, vm.access)
		if r.Status != http.StatusOK {
			t.Fatalf("bundle of vm %d: %d %s", vm.id, r.Status, r.Body)
		}
		calls = append(calls, r.Header.Get(metrics.HeaderKMSCalls))
	}
	if fmt.Sprint(calls) != "[1 0 0 0 0 0]" {
		t.Errorf("KMS calls of a cluster's fetches, its nodes' first then later ones: %v, want [1 0 0 0 0 0]", calls)
	}
}
