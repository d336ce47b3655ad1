package api

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/excloud/k8sapi/internal/apperr"
)

// errNotJSON ends the walk of a malformed body, which the decoder then
// refuses in its own words.
var errNotJSON = errors.New("not JSON")

// refuseDuplicateKeys refuses a body in which an object names one key
// twice: encoding/json would keep the last silently, so what the client
// meant is unknowable.
func refuseDuplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := walkValue(dec)
	if errors.Is(err, errNotJSON) {
		return nil
	}
	return err
}

// walkValue reads the value dec holds next, refusing the first key an
// object repeats.
func walkValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return errNotJSON
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec)
	case json.Delim('['):
		return walkArray(dec)
	}
	return nil
}

func walkObject(dec *json.Decoder) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return errNotJSON
		}
		if seen[key] {
			return apperr.InvalidJSON.Detailf("the key %q appears twice in one object", key)
		}
		seen[key] = true
		if err := walkValue(dec); err != nil {
			return err
		}
	}
	return closing(dec)
}

func walkArray(dec *json.Decoder) error {
	for dec.More() {
		if err := walkValue(dec); err != nil {
			return err
		}
	}
	return closing(dec)
}

// closing reads the delimiter that ends an object or array.
func closing(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil {
		return errNotJSON
	}
	return nil
}
