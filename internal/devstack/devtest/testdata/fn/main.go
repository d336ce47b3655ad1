// Command fn is a test function for the local gateway and Runtime API: a
// real lambdaserve binary whose routes echo, crash, hang and misbehave on
// demand.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/excloud/k8sapi/internal/lambdaserve"
	"github.com/excloud/k8sapi/internal/requestid"
)

func main() {
	if os.Getenv("FAIL_INIT") != "" {
		panic("init failure requested by FAIL_INIT")
	}
	started := time.Now().UnixNano() // tells warm from restarted processes apart
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
			"header": r.Header.Get("X-Test"), "body": body, "request_id": requestid.From(r.Context()),
			"env": os.Getenv("TEST_ENV"), "started": started,
		})
	})
	mux.HandleFunc("/crash", func(http.ResponseWriter, *http.Request) { os.Exit(3) })
	mux.HandleFunc("/hang", func(http.ResponseWriter, *http.Request) { time.Sleep(time.Hour) })
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte{0xff, 0x00, 0xfe})
	})
	lambdaserve.Start(mux)
}
