package apperr

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// body is the JSON error shape of every k8sapi answer that is not a
// success: {"error":{"code":...,"message":...,"request_id":...}}. The
// handlers (internal/api), the Lambda adapter (internal/lambdaserve) and the
// local gateway (internal/devstack/gateway) all write it through Body, so the shape
// the API description documents has one writer.
type body struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id,omitempty"`
	} `json:"error"`
}

// Body is e's JSON error body, newline-terminated; requestID may be empty.
// The cause is never in it.
func Body(e *Error, requestID string) []byte {
	var b body
	b.Error.Code, b.Error.Message, b.Error.RequestID = e.Code.String(), e.Message, requestID
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(b) // three strings always encode
	return buf.Bytes()
}

// WriteJSON answers e's status with Body as application/json.
func WriteJSON(w http.ResponseWriter, e *Error, requestID string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status())
	_, _ = w.Write(Body(e, requestID))
}
