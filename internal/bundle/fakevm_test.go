package bundle

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
)

// fakeVM is what a VM's shim and scripts talk to: IMDS (at /imds) and
// k8sapi's VM routes (at /api, by the paths the shell library is rendered
// from), for VM 102 with fixed credentials. It records every status report
// and answers them from statuses, in turn (204 once they run out), and
// answers a renewal with renewal (404 while it is nil).
type fakeVM struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reports  []vmReport
	statuses []int
	fetches  int // bundle fetches answered
	// workerFetches are the fetches answered on the worker's route.
	workerFetches int
	renewal       []byte
	csrs          map[string]string // the last renewal's requests
	// snapshot answers the etcd snapshot ask (204 while it is nil);
	// snapshotReports are the reports received, uploads what was PUT to
	// /upload/..., by path.
	snapshot        []byte
	snapshotReports []map[string]any
	uploads         map[string][]byte
	// restore answers the etcd restore route (404 while nil), counted in
	// restoreAsks; downloads are what GET /download/... serves, by path.
	restore     []byte
	restoreAsks int
	downloads   map[string][]byte
	// crl answers the etcd CRL route (204 while nil).
	crl []byte
	// membership answers the etcd membership route's GET (204 while nil);
	// membershipReports are the removals reported.
	membership        []byte
	membershipReports []map[string]any
	// signWorker answers a worker's certificate requests (404 while nil);
	// workerCSRs are the requests received.
	signWorker func(csrs map[string]string) ([]byte, error)
	workerCSRs []map[string]string
	// workerReports are the reports received on a worker's status route.
	workerReports []vmReport
	// renewWorker answers a worker's renewal (404 while nil);
	// workerRenewals are the renewals received.
	renewWorker    func(workerRenewal) ([]byte, error)
	workerRenewals []workerRenewal
	// healthReports are the health reports received, either role's;
	// refuseDeprecated answers one naming deprecated_apis 400, as a k8sapi
	// from before them would; healthHeaders are set on the answers.
	healthReports    []map[string]any
	refuseDeprecated bool
	healthHeaders    map[string]string
}

// workerRenewal is the body of a worker's renewal: requests and the
// certificates they prove, by identity name.
type workerRenewal struct {
	CSRs         map[string]string `json:"csrs"`
	Certificates map[string]string `json:"certificates"`
}

type vmReport struct {
	Phase   string `json:"phase"`
	Message string `json:"message"`
}

// requireTools fails (never skips: CI has them) when a tool the scripts
// need is missing.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required to run the bootstrap scripts: %v", tool, err)
		}
	}
}

func newFakeVM(t *testing.T, bundleBody []byte, statuses ...int) *fakeVM {
	t.Helper()
	vm := &fakeVM{statuses: statuses}
	mux := http.NewServeMux()
	imds := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get("X-exc-imds-token") != "imds-session" {
				http.Error(w, "no imds token", http.StatusUnauthorized)
				return
			}
			next(w, req)
		}
	}
	// k8sapi's routes also want the VM's access token, for VM 102 only.
	proven := func(next http.HandlerFunc) http.HandlerFunc {
		return imds(func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get("Authorization") != "Bearer principal-token" || req.PathValue("vm_id") != "102" {
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
			next(w, req)
		})
	}
	mux.HandleFunc("GET /imds/token", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("imds-session")) })
	mux.HandleFunc("GET /imds/latest/identity/node-identity", imds(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"node_id": 102}`))
	}))
	mux.HandleFunc("GET /imds/latest/identity/access-token", imds(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"access_token": "principal-token"}`))
	}))
	serveBundle := func(count *int) http.HandlerFunc {
		return proven(func(w http.ResponseWriter, _ *http.Request) {
			vm.mu.Lock()
			*count++
			vm.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(bundleBody)
		})
	}
	mux.HandleFunc("GET /api"+PathTemplate, serveBundle(&vm.fetches))
	mux.HandleFunc("GET /api"+WorkerPathTemplate, serveBundle(&vm.workerFetches))
	mux.HandleFunc("POST /api"+WorkerCSRPathTemplate, proven(func(w http.ResponseWriter, req *http.Request) {
		answerWith(vm, w, req, &vm.workerCSRs, &vm.signWorker)
	}))
	mux.HandleFunc("POST /api"+WorkerRenewPathTemplate, proven(func(w http.ResponseWriter, req *http.Request) {
		answerWith(vm, w, req, &vm.workerRenewals, &vm.renewWorker)
	}))
	mux.HandleFunc("POST /api"+StatusPathTemplate, proven(vm.statusInto(&vm.reports)))
	mux.HandleFunc("POST /api"+WorkerStatusPathTemplate, proven(vm.statusInto(&vm.workerReports)))
	mux.HandleFunc("POST /api"+RenewPathTemplate, proven(vm.renew))
	mux.HandleFunc("GET /api"+SnapshotPathTemplate, proven(vm.answerOf(&vm.snapshot)))
	mux.HandleFunc("POST /api"+SnapshotPathTemplate, proven(vm.snapshotReport))
	mux.HandleFunc("POST /api"+HealthPathTemplate, proven(vm.healthReport))
	mux.HandleFunc("POST /api"+WorkerHealthPathTemplate, proven(vm.healthReport))
	mux.HandleFunc("PUT /upload/", vm.upload)
	mux.HandleFunc("GET /api"+RestorePathTemplate, proven(vm.restoreAsk))
	mux.HandleFunc("GET /api"+EtcdCRLPathTemplate, proven(vm.answerOf(&vm.crl)))
	mux.HandleFunc("GET /api"+EtcdMembershipPathTemplate, proven(vm.answerOf(&vm.membership)))
	mux.HandleFunc("POST /api"+EtcdMembershipPathTemplate, proven(func(w http.ResponseWriter, req *http.Request) {
		if vm.recordReport(w, req, &vm.membershipReports) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"cluster_id":42,"name":"recorded"}`))
		}
	}))
	mux.HandleFunc("GET /download/", vm.download)
	vm.srv = httptest.NewServer(mux)
	t.Cleanup(vm.srv.Close)
	return vm
}

// statusInto records each report into reports.
func (vm *fakeVM) statusInto(reports *[]vmReport) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) { vm.status(w, req, reports) }
}

func (vm *fakeVM) status(w http.ResponseWriter, req *http.Request, reports *[]vmReport) {
	var r vmReport
	if req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&r) != nil {
		http.Error(w, "bad report", http.StatusBadRequest)
		return
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	*reports = append(*reports, r)
	code := http.StatusNoContent
	if len(vm.statuses) > 0 {
		code, vm.statuses = vm.statuses[0], vm.statuses[1:]
	}
	w.WriteHeader(code)
}

func (vm *fakeVM) renew(w http.ResponseWriter, req *http.Request) {
	var r struct {
		CSRs map[string]string `json:"csrs"`
	}
	if req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&r) != nil {
		http.Error(w, "bad renewal", http.StatusBadRequest)
		return
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.csrs = r.CSRs
	if vm.renewal == nil {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(vm.renewal)
}

// answerWith records a worker's JSON body into got and answers it with
// *answer: 404 while it is nil, 403 when it refuses.
func answerWith[T any](vm *fakeVM, w http.ResponseWriter, req *http.Request, got *[]T, answer *func(T) ([]byte, error)) {
	var body T
	if req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&body) != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	*got = append(*got, body)
	if *answer == nil {
		http.NotFound(w, req)
		return
	}
	out, err := (*answer)(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// env is what the shim and scripts are told of the fake services.
func (vm *fakeVM) env(root string) []string {
	return []string{
		"EXC_IMDS_BASE_URL=" + vm.srv.URL + "/imds",
		"EXK8S_BOOTSTRAP_BASE_URL=" + vm.srv.URL + "/api",
		// What a shim rendered for a local run exports: the fake is http.
		"EXK8S_CURL_PROTO==http,https",
		"EXK8S_ROOT=" + root,
	}
}

func (vm *fakeVM) bundleFetches() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.fetches
}

func (vm *fakeVM) received() []vmReport {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return append([]vmReport(nil), vm.reports...)
}

func (vm *fakeVM) receivedFromWorker() []vmReport {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return append([]vmReport(nil), vm.workerReports...)
}

// answerOf answers what *body holds as JSON, 204 while it is nil (the
// snapshot ask's and the CRL route's way).
func (vm *fakeVM) answerOf(body *[]byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		vm.mu.Lock()
		defer vm.mu.Unlock()
		if *body == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*body)
	}
}

func (vm *fakeVM) snapshotReport(w http.ResponseWriter, req *http.Request) {
	if !vm.recordReport(w, req, &vm.snapshotReports) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"object_key":"etcd-snapshots/42/7.db","size_bytes":1,"state":"uploaded"}`))
}

func (vm *fakeVM) healthReport(w http.ResponseWriter, req *http.Request) {
	if !vm.recordReport(w, req, &vm.healthReports) {
		return
	}
	vm.mu.Lock()
	_, named := vm.healthReports[len(vm.healthReports)-1]["deprecated_apis"]
	refuse := named && vm.refuseDeprecated
	vm.mu.Unlock()
	if refuse {
		http.Error(w, `{"error":{"code":"invalid_field"}}`, http.StatusBadRequest)
		return
	}
	vm.mu.Lock()
	for k, v := range vm.healthHeaders {
		w.Header().Set(k, v)
	}
	vm.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// recordReport appends req's JSON body to into; a body that is not JSON
// is answered 400 (false).
func (vm *fakeVM) recordReport(w http.ResponseWriter, req *http.Request, into *[]map[string]any) bool {
	var r map[string]any
	if req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&r) != nil {
		http.Error(w, "bad report", http.StatusBadRequest)
		return false
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	*into = append(*into, r)
	return true
}

func (vm *fakeVM) upload(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.URL.Query().Get("X-Amz-Signature") == "" {
		http.Error(w, "bad upload", http.StatusForbidden)
		return
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.uploads == nil {
		vm.uploads = map[string][]byte{}
	}
	vm.uploads[req.URL.Path] = body
}
