package vmstandin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/vmstandin"
)

// fakeIMDS answers every VM's session and access tokens.
func fakeIMDS(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/token") {
			_, _ = w.Write([]byte("session"))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"access"}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// fakeWorkerAPI is k8sapi's worker side over a CA of its own: it signs
// each request over a key it makes itself when foreignKey, and records
// every path called and every phase reported.
type fakeWorkerAPI struct {
	mu      sync.Mutex
	paths   []string
	reports []string // phase: message
}

func (f *fakeWorkerAPI) serve(t *testing.T, foreignKey bool) *httptest.Server {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	ca, _ := x509.ParseCertificate(caDER)
	sign := func(csrPEM string) string {
		blk, _ := pem.Decode([]byte(csrPEM))
		csr, err := x509.ParseCertificateRequest(blk.Bytes)
		if err != nil {
			t.Errorf("the stand-in's request: %v", err)
			return ""
		}
		pub := csr.PublicKey
		if foreignKey {
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pub = other.Public()
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: csr.Subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "GET /bootstrap/worker/7":
			_ = json.NewEncoder(w).Encode(map[string]string{"node_name": "web-2.cluster-1.internal", "ipv4": "10.0.0.9", "ca_cert": caPEM})
		case "POST /bootstrap/worker/7/csr":
			var req map[string]string
			_ = json.NewDecoder(r.Body).Decode(&req)
			_ = json.NewEncoder(w).Encode(map[string]string{"kubelet_client_cert": sign(req["kubelet_client_csr"]),
				"kubelet_serving_cert": sign(req["kubelet_serving_csr"]), "ca_cert": caPEM})
		case "POST /bootstrap/worker/7/status":
			var rep map[string]string
			_ = json.NewDecoder(r.Body).Decode(&rep)
			f.mu.Lock()
			f.reports = append(f.reports, rep["phase"]+": "+rep["message"])
			f.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// bootWorker boots VM 7 as a worker against f's api and waits for its
// last report (ready or failed).
func bootWorker(t *testing.T, f *fakeWorkerAPI, api *httptest.Server) {
	p := vmstandin.New(vmstandin.Config{IMDSBaseURL: fakeIMDS(t).URL, APIBaseURL: api.URL, Delay: time.Millisecond})
	defer p.Close()
	p.Boot(7, vmstandin.Worker)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		n := len(f.reports)
		last := n > 0 && (strings.HasPrefix(f.reports[n-1], "ready") || strings.HasPrefix(f.reports[n-1], "failed"))
		f.mu.Unlock()
		if last {
			return
		}
	}
	t.Fatal("the worker reported neither ready nor failed in 5 s")
}

// A worker boots through the worker's routes alone, has its two requests
// signed over keys it made, and reports the worker's phases.
func TestWorkerBootsThroughTheWorkerRoutes(t *testing.T) {
	var f fakeWorkerAPI
	bootWorker(t, &f, f.serve(t, false))
	want := []string{"GET /bootstrap/worker/7", "POST /bootstrap/worker/7/csr", "POST /bootstrap/worker/7/status", "POST /bootstrap/worker/7/status"}
	if strings.Join(f.paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls %q, want %q", f.paths, want)
	}
	if len(f.reports) != 2 || !strings.HasPrefix(f.reports[0], "kubelet_started: ") || !strings.HasPrefix(f.reports[1], "ready: ") {
		t.Fatalf("reports %q", f.reports)
	}
}

// An answer that is the CA's certificate for another key is refused, as
// the worker's script refuses it: the worker reports failed, never ready.
func TestWorkerRefusesACertificateForAnotherKey(t *testing.T) {
	var f fakeWorkerAPI
	bootWorker(t, &f, f.serve(t, true))
	if len(f.reports) != 1 || !strings.HasPrefix(f.reports[0], "failed: ") || !strings.Contains(f.reports[0], "not for this worker's key") {
		t.Fatalf("reports %q, want one failed naming the key", f.reports)
	}
}
