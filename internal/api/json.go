package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/excloud/k8sapi/internal/apperr"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		apperr.WriteJSON(w, apperr.Internal.New(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// decodeJSON reads exactly one JSON object into v, refusing unknown fields,
// trailing data and bodies over MaxBodyBytes.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return apperr.InvalidJSON.Detail("the body must hold one JSON object")
	}
	return nil
}

// decodeOptionalJSON is decodeJSON for a body that may be left out: an
// empty body leaves v as it is; any other is held to decodeJSON's rules.
func decodeOptionalJSON(r *http.Request, v any) error {
	body := bufio.NewReader(r.Body)
	if _, err := body.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{body, r.Body}
	return decodeJSON(r, v)
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return apperr.BodyTooLarge.Detailf("the body exceeds %d bytes", MaxBodyBytes)
	case errors.Is(err, io.EOF):
		return apperr.InvalidJSON.Detail("the body is empty")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.InvalidJSON.New()
	case errors.As(err, &typ):
		return apperr.InvalidField.Detailf("%s: must be a %s", typ.Field, typ.Type)
	}
	// encoding/json reports unknown fields as `json: unknown field "x"`.
	return apperr.InvalidField.Detail(trimJSONPrefix(err.Error()))
}

func trimJSONPrefix(s string) string {
	const p = "json: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
