package api

import (
	"context"
	"net/http"
	"time"
)

// deepCheckTimeout bounds each dependency ping so a hung dependency answers
// 503 instead of hanging the function.
const deepCheckTimeout = 3 * time.Second

type healthBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// health answers 200 when the function can serve, 418 while draining (so a
// load balancer stops sending), and with ?deep=1 pings every dependency and
// answers 503 naming the ones that failed.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s.Draining != nil && s.Draining() {
		writeJSON(w, http.StatusTeapot, healthBody{Status: "draining"})
		return
	}
	if r.URL.Query().Get("deep") != "1" {
		writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
		return
	}
	body := healthBody{Status: "ok", Checks: map[string]string{}}
	status := http.StatusOK
	for _, c := range s.Checks {
		ctx, cancel := context.WithTimeout(r.Context(), deepCheckTimeout)
		err := c.Ping(ctx)
		cancel()
		if err != nil {
			// Name what failed; the cause stays in the log.
			s.logger().WarnContext(r.Context(), "health check failed", "check", c.Name, "cause", err.Error())
			body.Checks[c.Name] = "unavailable"
			body.Status = "unavailable"
			status = http.StatusServiceUnavailable
			continue
		}
		body.Checks[c.Name] = "ok"
	}
	writeJSON(w, status, body)
}
