package vmstandin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"maps"
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
// every path called, every phase reported and every renewal.
type fakeWorkerAPI struct {
	mu       sync.Mutex
	paths    []string
	reports  []string // phase: message
	answered map[string]string
	renewals []renewalSeen
}

// renewalSeen is what one renewal proved: whether each request was signed
// with the key of the certificate it came with, and whether those were
// the certificates answered last.
type renewalSeen struct{ proved, lastAnswered bool }

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
		case "POST /bootstrap/worker/7/renew":
			var req struct{ CSRs, Certificates map[string]string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			f.mu.Lock()
			seen := renewalSeen{proved: len(req.CSRs) == 2, lastAnswered: maps.Equal(req.Certificates, f.answered)}
			f.answered = map[string]string{}
			for name, csr := range req.CSRs {
				seen.proved = seen.proved && sameKey(t, csr, req.Certificates[name])
				f.answered[name] = sign(csr)
			}
			f.renewals = append(f.renewals, seen)
			_ = json.NewEncoder(w).Encode(map[string]any{"certificates": f.answered, "renewed": []string{"kubelet-client", "kubelet"}})
			f.mu.Unlock()
		case "GET /bootstrap/worker/7":
			_ = json.NewEncoder(w).Encode(map[string]string{"node_name": "web-2.cluster-1.internal", "ipv4": "10.0.0.9", "ca_cert": caPEM})
		case "POST /bootstrap/worker/7/csr":
			var req map[string]string
			_ = json.NewDecoder(r.Body).Decode(&req)
			f.mu.Lock()
			f.answered = map[string]string{"kubelet-client": sign(req["kubelet_client_csr"]), "kubelet": sign(req["kubelet_serving_csr"])}
			_ = json.NewEncoder(w).Encode(map[string]string{"kubelet_client_cert": f.answered["kubelet-client"],
				"kubelet_serving_cert": f.answered["kubelet"], "ca_cert": caPEM})
			f.mu.Unlock()
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

// sameKey reports whether csrPEM is signed with certPEM's key.
func sameKey(t *testing.T, csrPEM, certPEM string) bool {
	cb, _ := pem.Decode([]byte(csrPEM))
	kb, _ := pem.Decode([]byte(certPEM))
	if cb == nil || kb == nil {
		return false
	}
	csr, err := x509.ParseCertificateRequest(cb.Bytes)
	if err != nil {
		t.Errorf("a renewal's request: %v", err)
		return false
	}
	cert, err := x509.ParseCertificate(kb.Bytes)
	return err == nil && cert.PublicKey.(*ecdsa.PublicKey).Equal(csr.PublicKey)
}

// bootWorker boots VM 7 as a worker against f's api, renewing every
// 20 ms once ready, and waits until done holds of f.
func bootWorker(t *testing.T, f *fakeWorkerAPI, api *httptest.Server, done func(*fakeWorkerAPI) bool) {
	p := vmstandin.New(vmstandin.Config{IMDSBaseURL: fakeIMDS(t).URL, APIBaseURL: api.URL, Delay: time.Millisecond, RenewEvery: 20 * time.Millisecond})
	defer p.Close()
	p.Boot(7, vmstandin.Worker)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		ok := done(f)
		f.mu.Unlock()
		if ok {
			return
		}
	}
	t.Fatalf("not done in 5 s: reports %q, renewals %+v", f.reports, f.renewals)
}

// A worker boots through the worker's routes alone, has its two requests
// signed over keys it made, reports the worker's phases, then renews as
// its timer does: each request signed with the key of the certificate it
// shows, and the certificates shown those the last answer gave it.
func TestWorkerBootsThroughTheWorkerRoutesAndRenews(t *testing.T) {
	var f fakeWorkerAPI
	bootWorker(t, &f, f.serve(t, false), func(f *fakeWorkerAPI) bool { return len(f.renewals) >= 2 })
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []string{"GET /bootstrap/worker/7", "POST /bootstrap/worker/7/csr", "POST /bootstrap/worker/7/status", "POST /bootstrap/worker/7/status",
		"POST /bootstrap/worker/7/renew", "POST /bootstrap/worker/7/renew"}
	if strings.Join(f.paths[:6], "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls %q, want %q first", f.paths, want)
	}
	if len(f.reports) != 2 || !strings.HasPrefix(f.reports[0], "kubelet_started: ") || !strings.HasPrefix(f.reports[1], "ready: ") {
		t.Fatalf("reports %q", f.reports)
	}
	for i, r := range f.renewals[:2] {
		if !r.proved || !r.lastAnswered {
			t.Fatalf("renewal %d: %+v; want each key proved with the certificates last answered", i, r)
		}
	}
}

// An answer that is the CA's certificate for another key is refused, as
// the worker's script refuses it: the worker reports failed, never ready.
func TestWorkerRefusesACertificateForAnotherKey(t *testing.T) {
	var f fakeWorkerAPI
	bootWorker(t, &f, f.serve(t, true), func(f *fakeWorkerAPI) bool { return len(f.reports) > 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reports) != 1 || !strings.HasPrefix(f.reports[0], "failed: ") || !strings.Contains(f.reports[0], "kubelet-client: not for this node's key") {
		t.Fatalf("reports %q, want one failed naming the key", f.reports)
	}
}
