package api

import "net/http"

// reportHealth serves POST /bootstrap/control-plane/{vm_id}/health: a
// ready node reports that it is alive and what it sees (its kubelet, its
// etcd member, its API server's /readyz). The body is read only once the
// VM has proved itself.
func (s *Server) reportHealth(w http.ResponseWriter, r *http.Request) {
	recordReport(s, w, r, s.Health.Report)
}

// reportWorkerHealth serves POST /bootstrap/worker/{vm_id}/health: a
// ready worker's report (its kubelet).
func (s *Server) reportWorkerHealth(w http.ResponseWriter, r *http.Request) {
	recordReport(s, w, r, s.Health.ReportWorker)
}
