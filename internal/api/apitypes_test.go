package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/apitypes"
)

// shapes are the API's types the handlers answer (apitypes), each named
// as its schema in the document.
var shapes = []any{
	apitypes.ClusterView{}, apitypes.ClusterList{}, apitypes.FoundingResult{}, apitypes.DNSRecord{},
	apitypes.NodeView{}, apitypes.WorkerView{}, apitypes.NodeReplacement{}, apitypes.Condition{},
	apitypes.Bootstrap{}, apitypes.NodeBootstrap{}, apitypes.BootstrapStep{}, apitypes.RunningStep{},
	apitypes.NodeBootstrapDetail{}, apitypes.BootstrapWindow{}, apitypes.Fetch{}, apitypes.NodePool{}, apitypes.NodePoolList{}, apitypes.Taint{},
	apitypes.IssuedKubeconfig{}, apitypes.KubeconfigIssue{}, apitypes.KubeconfigIssueList{},
	apitypes.AuditEvent{}, apitypes.AuditEventList{}, apitypes.EtcdSnapshot{}, apitypes.EtcdSnapshotList{},
}

// jsonFields are t's JSON names (an embedded struct's promoted), each
// with whether it is omitted when empty.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			for name, omit := range jsonFields(f.Type) {
				if _, shadowed := out[name]; !shadowed {
					out[name] = omit
				}
			}
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out[name] = opts == "omitempty" // an outer field shadows a promoted one
	}
	return out
}

// Every shape's fields are its schema's properties, no more and no fewer,
// and a field the code may omit is not one the document requires: the
// types are the one definition, so the document is held to them here.
func TestAPITypesAreTheDocumentedSchemas(t *testing.T) {
	for _, s := range shapes {
		typ := reflect.TypeOf(s)
		schema := apidocstest.Schema(typ.Name())
		if schema == nil {
			t.Errorf("apitypes.%s: no schema of that name in the document", typ.Name())
			continue
		}
		fields := jsonFields(typ)
		props, _ := schema["properties"].(map[string]any)
		code, doc := mapsKeys(fields), mapsKeys(props)
		if !slices.Equal(code, doc) {
			t.Errorf("apitypes.%s has fields %v; the schema's properties are %v", typ.Name(), code, doc)
		}
		for _, r := range asAny(schema["required"]) {
			if fields[r.(string)] {
				t.Errorf("apitypes.%s omits %s when empty; the schema requires it", typ.Name(), r)
			}
		}
	}
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
