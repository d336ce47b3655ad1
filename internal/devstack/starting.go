package devstack

import (
	"net/http"
	"sync/atomic"

	"github.com/excloud/k8sapi/internal/apperr"
)

// startingGateway serves the gateway's port from the moment it is taken: a
// 503 naming the step the stack is at, until the functions are up and the
// gateway takes over. A request sent early is told to come back, never
// left waiting on a port nobody serves.
type startingGateway struct {
	gateway atomic.Pointer[Gateway]
	step    atomic.Pointer[string]
}

// at records the step the stack is at, for the 503's reason.
func (s *startingGateway) at(step string) { s.step.Store(&step) }

// ready hands every later request to gw.
func (s *startingGateway) ready(gw *Gateway) { s.gateway.Store(gw) }

func (s *startingGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if gw := s.gateway.Load(); gw != nil {
		gw.ServeHTTP(w, r)
		return
	}
	reason := "the local stack is starting"
	if step := s.step.Load(); step != nil {
		reason += ": " + *step
	}
	w.Header().Set("Retry-After", "1")
	writeGatewayError(w, apperr.StackStarting.Detail(reason), newRequestID())
}
