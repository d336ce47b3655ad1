package apidocstest

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every operation that answers a body shows an example of a success
// answer (the page at /docs renders it), and every example of a JSON
// answer validates against its response's schema, so none can drift from
// the contract.
func TestEveryOperationShowsAValidExample(t *testing.T) {
	for _, o := range Operations() {
		shown, bodies := 0, 0
		for status, r := range obj(o.Op["responses"]) {
			if !strings.HasPrefix(status, "2") {
				continue
			}
			for ct, c := range obj(Resolve(r)["content"]) {
				bodies++
				ex, ok := obj(c)["example"]
				if !ok {
					continue
				}
				shown++
				if ct == "application/json" {
					checkExample(t, o.pointer()+"/responses/"+status+"/content/"+escape(ct)+"/schema", ex, o.Key()+" "+status)
				}
			}
		}
		if bodies > 0 && shown == 0 {
			t.Errorf("%s: no success response shows an example", o.Key())
		}
	}
}

// checkExample validates ex against the schema at ptr, as a body decoded
// with UseNumber.
func checkExample(t *testing.T, ptr string, ex any, what string) {
	t.Helper()
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON(ptr, b); err != nil {
		t.Errorf("%s: its example does not validate: %v", what, err)
	}
}
