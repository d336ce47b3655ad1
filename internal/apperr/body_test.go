package apperr

import (
	"errors"
	"net/http/httptest"
	"testing"
)

// The one error shape, to the byte: request_id only when known, text as is,
// the cause never.
func TestBody(t *testing.T) {
	if got := string(Body(NotFound.Detail("no route for GET /a<b>"), "")); got != `{"error":{"code":"not_found","message":"no route for GET /a<b>"}}`+"\n" {
		t.Errorf("without request id: %s", got)
	}
	rec := httptest.NewRecorder()
	WriteJSON(rec, DatabaseUnavailable.Wrap(errors.New("dial tcp: secret detail")), "req-1")
	if rec.Code != 503 || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != `{"error":{"code":"database_unavailable","message":"the database is unavailable","request_id":"req-1"}}`+"\n" {
		t.Errorf("WriteJSON: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}
