// Package apidocstest holds the API description to the code in tests: it
// finds the operation of a recorded response and validates the response
// against it (status documented, X-Request-Id present, body valid against
// its schema, error code listed and request_id equal to the header). Bodies
// are validated by a full JSON Schema 2020-12 validator (the dialect of
// OpenAPI 3.1), github.com/santhosh-tekuri/jsonschema, with formats
// asserted.
//
// Only tests import this package; no Lambda links it.
package apidocstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/excloud/k8sapi/internal/apidocs"
)

// Doc is the parsed OpenAPI document.
var Doc = mustParse(apidocs.OpenAPI)

func mustParse(b []byte) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		panic("apidocs: openapi.json: " + err.Error())
	}
	return m
}

// Methods of OpenAPI path items, in the order the document lists them.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operation is one method of one path.
type Operation struct {
	Method string // upper case
	Path   string
	Op     map[string]any
}

// Key is "METHOD /path", the form of template.yaml and api.Routes.
func (o Operation) Key() string { return o.Method + " " + o.Path }

// Operations lists every operation of the document, sorted by key.
func Operations() []Operation {
	var ops []Operation
	for path, item := range obj(Doc["paths"]) {
		for _, m := range Methods {
			if op, ok := obj(item)[m].(map[string]any); ok {
				ops = append(ops, Operation{Method: strings.ToUpper(m), Path: path, Op: op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Key() < ops[j].Key() })
	return ops
}

// Find returns the operation serving method and a concrete path.
func Find(method, path string) (Operation, bool) {
	segs := strings.Split(path, "/")
	for _, o := range Operations() {
		if o.Method != method {
			continue
		}
		tsegs := strings.Split(o.Path, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		match := true
		for i, t := range tsegs {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				match = match && segs[i] != ""
			} else {
				match = match && t == segs[i]
			}
		}
		if match {
			return o, true
		}
	}
	return Operation{}, false
}

var (
	mu      sync.Mutex
	checked = map[string]int{}
)

// Checked returns how many responses were validated per "operationId status".
func Checked() map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(checked))
	for k, v := range checked {
		out[k] = v
	}
	return out
}

// Check validates a response to method rawURL against the document.
// documented is false when no operation serves the path (another service,
// or an unknown route); err says how the response breaks the contract.
func Check(method, rawURL string, status int, header http.Header, body []byte) (documented bool, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false, err
	}
	o, ok := Find(method, u.Path)
	if !ok {
		return false, nil
	}
	where := fmt.Sprintf("%s %d", o.Key(), status)
	if err := o.check(status, header, body); err != nil {
		return true, fmt.Errorf("%s: %w", where, err)
	}
	mu.Lock()
	checked[fmt.Sprint(o.Op["operationId"], " ", status)]++
	mu.Unlock()
	return true, nil
}

func (o Operation) check(status int, header http.Header, body []byte) error {
	ptr, r, ok := follow(o.pointer() + "/responses/" + fmt.Sprint(status))
	if !ok {
		return fmt.Errorf("the status is not documented (body %.200s)", body)
	}
	id := header.Get("X-Request-Id")
	if _, ok := obj(r["headers"])["X-Request-Id"]; !ok {
		return errors.New("the document does not declare X-Request-Id")
	}
	if id == "" {
		return errors.New("no X-Request-Id header")
	}
	content := obj(r["content"])
	if len(content) == 0 {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if _, ok := content[ct]; !ok {
		return fmt.Errorf("Content-Type %q is not documented", header.Get("Content-Type"))
	}
	if ct != "application/json" {
		return nil
	}
	v, err := decode(body)
	if err != nil {
		return err
	}
	if err := Validate(ptr+"/content/"+escape(ct)+"/schema", v); err != nil {
		return fmt.Errorf("the body breaks its schema: %w", err)
	}
	return checkErrorCode(r, v, id)
}

// checkErrorCode: an error body names a code its response lists, and the
// request id of its header.
func checkErrorCode(r map[string]any, v any, id string) error {
	codes, ok := r["x-error-codes"].([]any)
	if !ok {
		return nil
	}
	e := obj(obj(v)["error"])
	if !slices.Contains(codes, e["code"]) {
		return fmt.Errorf("error code %v is not one of %v", e["code"], codes)
	}
	if e["request_id"] != id {
		return fmt.Errorf("request_id %v, X-Request-Id %q", e["request_id"], id)
	}
	return nil
}

// pointer is the operation's JSON pointer in the document.
func (o Operation) pointer() string {
	return "#/paths/" + escape(o.Path) + "/" + strings.ToLower(o.Method)
}

// escape is one JSON pointer token (RFC 6901).
func escape(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// follow returns the node at a local JSON pointer, following $refs, and the
// pointer where it was found.
func follow(ptr string) (string, map[string]any, bool) {
	for range 16 {
		var cur any = Doc
		for _, p := range strings.Split(strings.TrimPrefix(ptr, "#/"), "/") {
			cur = obj(cur)[strings.NewReplacer("~1", "/", "~0", "~").Replace(p)]
		}
		m := obj(cur)
		ref, isRef := m["$ref"].(string)
		if !isRef {
			return ptr, m, m != nil
		}
		ptr = ref
	}
	return "", nil, false
}

func decode(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", err)
	}
	return v, nil
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// Resolve follows local $refs ("#/components/...").
func Resolve(v any) map[string]any {
	m := obj(v)
	if ref, ok := m["$ref"].(string); ok {
		_, m, _ = follow(ref)
	}
	return m
}

// Schema returns components.schemas[name].
func Schema(name string) map[string]any {
	return obj(obj(obj(Doc["components"])["schemas"])[name])
}

// SchemaRef is the pointer of components.schemas[name], for Validate.
func SchemaRef(name string) string { return "#/components/schemas/" + name }

// ValidateJSON validates a JSON text against the schema at ptr.
func ValidateJSON(ptr string, b []byte) error {
	v, err := decode(b)
	if err != nil {
		return err
	}
	return Validate(ptr, v)
}

// Validate checks v (decoded with UseNumber) against the schema at ptr, a
// local JSON pointer into the document ("#/components/schemas/Error").
func Validate(ptr string, v any) error {
	sch, err := compiled(ptr)
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

var (
	compileMu sync.Mutex
	compiler  *jsonschema.Compiler
	schemas   = map[string]*jsonschema.Schema{}
)

// compiled compiles the schema at ptr once. The whole document is one
// resource, so the schemas' $refs resolve as OpenAPI 3.1 means them.
func compiled(ptr string) (*jsonschema.Schema, error) {
	compileMu.Lock()
	defer compileMu.Unlock()
	if sch, ok := schemas[ptr]; ok {
		return sch, nil
	}
	if compiler == nil {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1's dialect
		c.AssertFormat()
		if err := c.AddResource(docURL, Doc); err != nil {
			return nil, fmt.Errorf("loading the document: %w", err)
		}
		compiler = c
	}
	sch, err := compiler.Compile(docURL + ptr)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", ptr, err)
	}
	schemas[ptr] = sch
	return sch, nil
}

// docURL names the document as a schema resource.
const docURL = "urn:k8sapi:openapi.json"
