package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// getWorkerBundle serves GET /bootstrap/worker/{vm_id}: what a worker needs
// to join, as facts (no private key, no admin identity).
func (s *Server) getWorkerBundle(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	b, err := s.Workers.WorkerBundle(r.Context(), vm)
	s.answerUncached(w, r, b, err)
}

// signWorkerCSRs serves POST /bootstrap/worker/{vm_id}/csr: the worker's
// kubelet certificate requests, signed once per bootstrap window for the
// names k8sapi recorded. The body is read only once the VM has proved
// itself, so a stranger learns nothing from how it is judged.
func (s *Server) signWorkerCSRs(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var req nodebootstrap.WorkerCSRRequest
	err := decodeJSON(r, &req)
	var certs *nodebootstrap.WorkerCertificates
	if err == nil {
		certs, err = s.Workers.SignWorker(r.Context(), vm, req)
	}
	s.answerUncached(w, r, certs, err)
}

// renewWorkerCertificates serves POST /bootstrap/worker/{vm_id}/renew: a
// ready worker proves it holds the key of each certificate it shows and
// gets them re-issued when due, for the names k8sapi recorded.
func (s *Server) renewWorkerCertificates(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var req nodebootstrap.WorkerRenewalRequest
	err := decodeJSON(r, &req)
	var renewal *nodebootstrap.RenewalOutcome
	if err == nil {
		renewal, err = s.Workers.RenewWorker(r.Context(), vm, req)
	}
	s.answerRenewal(w, r, renewal, err)
}

// answerUncached answers a VM route's outcome: its refusal, or out as a
// 200 no cache may keep (it names the node and is signed for it alone).
func (s *Server) answerUncached(w http.ResponseWriter, r *http.Request, out any, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}
