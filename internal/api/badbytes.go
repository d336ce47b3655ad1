package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/excloud/k8sapi/internal/apperr"
)

// Bad bytes: a NUL, or bytes that are not UTF-8. k8sapi stores text in
// PostgreSQL, which refuses a NUL in text outright (its error would be a
// 503 database_unavailable) and which holds UTF-8 only; no name, id or
// message k8sapi takes has a use for either. So they are refused as the
// request's own fault, 400, before anything reads them: a path segment or
// a query value by screened, for every route at once, before its handler
// runs; a JSON string by decodeJSON, the one decoder every body goes
// through (a body is read only once the caller proved itself, as before).

// badText reports whether s holds a NUL or is not UTF-8.
func badText(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// badBytesMessage says what was refused and why, after the place's name.
const badBytesMessage = " holds a NUL byte or bytes that are not UTF-8; k8sapi takes UTF-8 text without NUL"

// screenRequest is the edge's check of req's path and query values.
func screenRequest(req *http.Request) error {
	if badText(req.URL.Path) {
		return apperr.InvalidPath.Detail("the path" + badBytesMessage)
	}
	for key, values := range req.URL.Query() {
		if badText(key) || badValues(values) {
			return apperr.InvalidQuery.Detail("a query parameter" + badBytesMessage)
		}
	}
	return nil
}

func badValues(values []string) bool {
	for _, v := range values {
		if badText(v) {
			return true
		}
	}
	return false
}

// screened answers a request screenRequest refuses (then names its
// operator for the audit trail); any other goes on.
func (s *Server) screened(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if err := screenRequest(req); err != nil {
			s.writeError(w, req, err)
			s.noteRefusedOperator(req)
			return
		}
		next(w, req)
	}
}

// screenJSONStrings refuses a body that is not UTF-8, or one whose strings
// spell a NUL (\u0000) or half of a surrogate pair (\ud800 alone), which
// encoding/json would decode silently into a NUL or U+FFFD.
func screenJSONStrings(body []byte) error {
	if !utf8.Valid(body) {
		return apperr.InvalidRequest.Detail("the body" + badBytesMessage)
	}
	if escapesBadText(body) {
		return apperr.InvalidRequest.Detail("a string of the body" + badBytesMessage + ` (no \u0000, no unpaired surrogate)`)
	}
	return nil
}

// escapesBadText walks body's strings and reports whether an escape in
// one spells a NUL or an unpaired surrogate. A body that is not JSON is
// left to the decoder to refuse.
func escapesBadText(body []byte) bool {
	inString := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(body):
			i++
			if body[i] != 'u' {
				continue
			}
			bad, width := badUnicodeEscape(body[i-1:])
			if bad {
				return true
			}
			i += width - 2
		}
	}
	return false
}

// badUnicodeEscape judges the \uXXXX escape esc starts with (a high
// surrogate with the low one after it); width is how many bytes it spans.
func badUnicodeEscape(esc []byte) (bad bool, width int) {
	r, ok := hex4(esc)
	switch {
	case !ok:
		return false, 2 // not an escape the decoder takes: its to refuse
	case r == 0:
		return true, 6
	case r >= 0xdc00 && r <= 0xdfff:
		return true, 6 // a low surrogate with no high one before it
	case r < 0xd800 || r > 0xdbff:
		return false, 6
	}
	low, ok := hex4(esc[6:])
	return !ok || low < 0xdc00 || low > 0xdfff, 12
}

// hex4 is the code unit of the \uXXXX escape b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | d
	}
	return r, true
}

func hexDigit(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}
