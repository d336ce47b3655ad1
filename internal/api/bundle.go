package api

import (
	"context"
	"net/http"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// getBundle serves GET /bootstrap/control-plane/{vm_id}.
func (s *Server) getBundle(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	b, err := s.Bundles.Bundle(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b.Response())
}

// reportStatus serves POST /bootstrap/control-plane/{vm_id}/status: a VM
// reports its own bootstrap phase. The body is read only once the VM has
// proved itself, so a stranger learns nothing from how it is judged.
func (s *Server) reportStatus(w http.ResponseWriter, r *http.Request) {
	recordReport(s, w, r, s.Progress.Report)
}

// reportWorkerStatus serves POST /bootstrap/worker/{vm_id}/status: a
// worker reports its own bootstrap phase, one of a worker's.
func (s *Server) reportWorkerStatus(w http.ResponseWriter, r *http.Request) {
	recordReport(s, w, r, s.Progress.ReportWorker)
}

// recordReport records a VM's report (a phase, a health report) with
// record, once it proved itself.
func recordReport[R any](s *Server, w http.ResponseWriter, r *http.Request, record func(context.Context, auth.BootstrapVM, R) error) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var rep R
	err := decodeJSON(r, &rep)
	if err == nil {
		err = record(r.Context(), vm, rep)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// renewCertificates serves POST /bootstrap/control-plane/{vm_id}/renew: a
// ready node proves it holds each of its keys (one certificate request per
// identity) and gets certificates only, re-issued when due. The body is
// read only once the VM has proved itself.
func (s *Server) renewCertificates(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var req nodebootstrap.RenewalRequest
	err := decodeJSON(r, &req)
	var renewal *nodebootstrap.RenewalOutcome
	if err == nil {
		renewal, err = s.Renewals.Renew(r.Context(), vm, req)
	}
	s.answerRenewal(w, r, renewal, err)
}

// answerRenewal answers a renewal, a control-plane node's or a worker's,
// in its one wire shape.
func (s *Server) answerRenewal(w http.ResponseWriter, r *http.Request, renewal *nodebootstrap.RenewalOutcome, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answerUncached(w, r, renewal.Response(), nil)
}

// bootstrapVM runs the four proofs of the VM routes, cheapest first, each
// failing closed: vm_id parses (400), then the IMDS session, the principal
// token, the org match and the VM match (auth); then spends one call of the
// VM's budget for the route (429), counted in the proofs' one round trip.
// On failure it has already answered.
func (s *Server) bootstrapVM(w http.ResponseWriter, r *http.Request) (auth.BootstrapVM, bool) {
	vm, err := s.proveVM(r)
	if err != nil {
		s.writeError(w, r, err)
		return auth.BootstrapVM{}, false
	}
	return vm, true
}

// proveVM runs the four proofs and judges the route's count.
func (s *Server) proveVM(r *http.Request) (auth.BootstrapVM, error) {
	vmID, err := parseID("vm_id", r.PathValue("vm_id"))
	if err != nil {
		return auth.BootstrapVM{}, err
	}
	budget := s.budgetOf(r.Pattern)
	call := s.Limits.Call(r.Pattern, budget)
	vm, window, err := s.Auth.ProveVM(r.Context(), vmID, r.Header.Get("X-exc-imds-token"), r.Header.Get("Authorization"), call)
	if err != nil {
		return vm, err
	}
	noteVM(r, vm)
	return vm, s.Limits.Judge(call, window, budget)
}
