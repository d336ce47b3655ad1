// Package paging is the one cursor of k8sapi's listings (GET /clusters,
// GET /clusters/{id}/events): an opaque string naming the last row of a
// page, newest first, and the cut of a page read one row long, which
// tells whether a next page exists.
package paging

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
)

// cursorPrefix versions the cursor's content: clients hold cursors as
// opaque strings, so what they hold may change only under a new prefix.
const cursorPrefix = "v1:"

// Encode is the opaque cursor of a listing's page that ends at row id:
// the next page starts after it.
func Encode(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

// Decode is the row id a cursor names; false for a string that Encode
// did not make.
func Decode(cursor string) (int64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil && id > 0
}

// Cut is a page of rows read limit+1 long: its first limit rows, and the
// cursor of the next page when there was one more (nil on the last).
func Cut[T any](rows []T, limit int, idOf func(T) int64) ([]T, *string) {
	if len(rows) <= limit {
		return rows, nil
	}
	next := Encode(idOf(rows[limit-1]))
	return rows[:limit], &next
}

// After is the row id a request's cursor names (0 for none, the first
// page); a cursor this API did not give is the request's error.
func After(cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	id, ok := Decode(cursor)
	if !ok {
		return 0, apperr.InvalidQuery.Detail("cursor: not a cursor this API gave; start again without one")
	}
	return id, nil
}
