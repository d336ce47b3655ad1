package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"

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

// decodeJSON reads exactly one JSON object into v, refusing a media type
// that is not JSON, unknown fields, duplicate keys, bad bytes in a string
// (badbytes.go), trailing data and bodies over MaxBodyBytes.
func decodeJSON(r *http.Request, v any) error {
	if err := jsonMediaType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if err := refuseDuplicateKeys(body); err != nil {
		return err
	}
	if err := screenJSONStrings(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return apperr.InvalidJSON.Detail("the body must hold one JSON object")
	}
	return nil
}

// jsonMediaType refuses a body declared as anything but JSON; a body sent
// without a Content-Type is read as JSON, the only thing k8sapi reads.
func jsonMediaType(contentType string) error {
	if contentType == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return apperr.UnsupportedMediaType.New()
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
		return apperr.InvalidField.Detailf("%s: must be %s", fieldName(typ.Field), typeInWords(typ.Type))
	}
	// encoding/json reports unknown fields as `json: unknown field "x"`.
	return apperr.InvalidField.Detail(trimJSONPrefix(err.Error()))
}

// fieldName is the dotted path encoding/json names; empty is the body.
func fieldName(field string) string {
	if field == "" {
		return "the body"
	}
	return field
}

// typeInWords names what a JSON value must be, in the words of JSON, not
// of Go (a client never sees a Go type).
func typeInWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return typeInWords(t.Elem())
	}
	return "an object"
}

func trimJSONPrefix(s string) string {
	const p = "json: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
