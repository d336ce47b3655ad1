package gateway

import (
	"net/http"
	"sync/atomic"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
)

// Starting serves the gateway's port from the moment it is taken: a
// 503 naming the step the stack is at, until the functions are up and the
// gateway takes over. A request sent early is told to come back, never
// left waiting on a port nobody serves.
type Starting struct {
	gateway atomic.Pointer[Gateway]
	step    atomic.Pointer[string]
}

// At records the step the stack is at, for the 503's reason.
func (s *Starting) At(step string) { s.step.Store(&step) }

// Ready hands every later request to gw.
func (s *Starting) Ready(gw *Gateway) { s.gateway.Store(gw) }

func (s *Starting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if gw := s.gateway.Load(); gw != nil {
		gw.ServeHTTP(w, r)
		return
	}
	reason := "the local stack is starting"
	if step := s.step.Load(); step != nil {
		reason += ": " + *step
	}
	w.Header().Set("Retry-After", "1")
	writeGatewayError(w, apperr.StackStarting.Detail(reason), lambdaruntime.NewRequestID())
}
