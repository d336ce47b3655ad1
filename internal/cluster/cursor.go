package cluster

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// cursorPrefix versions the cursor's content: clients hold cursors as
// opaque strings, so what they hold may change only under a new prefix.
const cursorPrefix = "v1:"

// encodeCursor is the opaque cursor of a listing's page that ends at
// cluster id: the next page starts after it.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

// decodeCursor is the cluster id a cursor names; false for a string that
// encodeCursor did not make.
func decodeCursor(cursor string) (int64, bool) {
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
