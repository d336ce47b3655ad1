// Package apidocstest holds the API description to the code in tests: it
// finds the operation of a recorded response and validates the response
// against it (status documented, X-Request-Id present, body valid against
// its schema, error code listed and request_id equal to the header). The
// schema validator covers the subset of JSON Schema the document uses;
// UnsupportedKeywords finds any keyword outside it.
//
// Only tests import this package; no Lambda links it.
package apidocstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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
	resp, ok := obj(o.Op["responses"])[fmt.Sprint(status)]
	if !ok {
		return true, fmt.Errorf("%s: the status is not documented (body %.200s)", where, body)
	}
	r := Resolve(resp)
	id := header.Get("X-Request-Id")
	if _, ok := obj(r["headers"])["X-Request-Id"]; !ok {
		return true, fmt.Errorf("%s: the document does not declare X-Request-Id", where)
	}
	if id == "" {
		return true, fmt.Errorf("%s: no X-Request-Id header", where)
	}
	content := obj(r["content"])
	if len(content) > 0 {
		ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
		media, ok := content[ct]
		if !ok {
			return true, fmt.Errorf("%s: Content-Type %q is not documented", where, header.Get("Content-Type"))
		}
		if ct == "application/json" {
			v, err := decode(body)
			if err != nil {
				return true, fmt.Errorf("%s: %v", where, err)
			}
			if errs := Validate(obj(media)["schema"], v); len(errs) > 0 {
				return true, fmt.Errorf("%s: the body breaks its schema: %v", where, errors(errs))
			}
			if codes, ok := r["x-error-codes"].([]any); ok {
				e := obj(obj(v)["error"])
				if !slices.Contains(codes, e["code"]) {
					return true, fmt.Errorf("%s: error code %v is not one of %v", where, e["code"], codes)
				}
				if e["request_id"] != id {
					return true, fmt.Errorf("%s: request_id %v, X-Request-Id %q", where, e["request_id"], id)
				}
			}
		}
	}
	mu.Lock()
	checked[fmt.Sprint(o.Op["operationId"], " ", status)]++
	mu.Unlock()
	return true, nil
}

func errors(errs []error) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

func decode(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("body is not JSON: %v", err)
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
	for i := 0; m != nil && i < 16; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = Doc
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = obj(cur)[p]
		}
		m = obj(cur)
	}
	return m
}

// Schema returns components.schemas[name].
func Schema(name string) map[string]any {
	return obj(obj(obj(Doc["components"])["schemas"])[name])
}

// ValidateJSON validates a JSON text against a schema.
func ValidateJSON(schema any, b []byte) []error {
	v, err := decode(b)
	if err != nil {
		return []error{err}
	}
	return Validate(schema, v)
}

// Validate checks v (decoded with UseNumber) against schema.
func Validate(schema any, v any) []error {
	var errs []error
	validate(schema, v, "$", &errs)
	return errs
}

// Keywords is the subset of JSON Schema the validator implements; the rest
// are annotations it ignores.
var Keywords = []string{"$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const",
	"minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "format"}

var annotations = []string{"description", "default", "example", "examples", "title"}

func validate(schema any, v any, at string, errs *[]error) {
	s := Resolve(schema)
	if s == nil {
		return
	}
	bad := func(format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("%s: "+format, append([]any{at}, args...)...))
	}
	if t, ok := s["type"]; ok {
		var types []any
		if list, ok := t.([]any); ok {
			types = list
		} else {
			types = []any{t}
		}
		if !slices.ContainsFunc(types, func(t any) bool { return isType(v, t.(string)) }) {
			bad("%s is not of type %v", short(v), t)
			return
		}
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		bad("%s is not one of %v", short(v), e)
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		bad("%s is not %v", short(v), c)
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		if m, ok := num(s["minimum"]); ok && f < m {
			bad("%s is below the minimum %v", x, m)
		}
		if m, ok := num(s["maximum"]); ok && f > m {
			bad("%s is above the maximum %v", x, m)
		}
	case string:
		n := len([]rune(x))
		if m, ok := num(s["minLength"]); ok && float64(n) < m {
			bad("length %d is below %v", n, m)
		}
		if m, ok := num(s["maxLength"]); ok && float64(n) > m {
			bad("length %d is above %v", n, m)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			bad("%q does not match %s", x, p)
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
				bad("%q is not a date-time", x)
			}
		}
	case []any:
		if m, ok := num(s["minItems"]); ok && float64(len(x)) < m {
			bad("%d items, fewer than %v", len(x), m)
		}
		if m, ok := num(s["maxItems"]); ok && float64(len(x)) > m {
			bad("%d items, more than %v", len(x), m)
		}
		if s["uniqueItems"] == true {
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if equal(x[i], x[j]) {
						bad("items %d and %d are equal", i, j)
					}
				}
			}
		}
		if items, ok := s["items"]; ok {
			for i, it := range x {
				validate(items, it, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	case map[string]any:
		for _, r := range asList(s["required"]) {
			if _, ok := x[r.(string)]; !ok {
				bad("required field %q is missing", r)
			}
		}
		props := obj(s["properties"])
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := props[k]; ok {
				validate(p, x[k], at+"."+k, errs)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("field %q is not in the schema", k)
				}
			case map[string]any:
				validate(ap, x[k], at+"."+k, errs)
			}
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func isType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		_, err := x.Int64()
		return t == "integer" && err == nil
	}
	return false
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// UnsupportedKeywords lists schema keywords of the document that Validate
// would silently ignore, as "where: keyword".
func UnsupportedKeywords() []string {
	var out []string
	var walk func(s any, at string)
	walk = func(s any, at string) {
		m := obj(s)
		for k, v := range m {
			switch {
			case k == "properties":
				for name, p := range obj(v) {
					walk(p, at+".properties."+name)
				}
			case k == "items" || (k == "additionalProperties" && obj(v) != nil):
				walk(v, at+"."+k)
			case slices.Contains(Keywords, k) || slices.Contains(annotations, k):
			default:
				out = append(out, at+": "+k)
			}
		}
	}
	comps := obj(Doc["components"])
	for name, s := range obj(comps["schemas"]) {
		walk(s, "#/components/schemas/"+name)
	}
	for name, p := range obj(comps["parameters"]) {
		walk(obj(p)["schema"], "#/components/parameters/"+name)
	}
	for name, h := range obj(comps["headers"]) {
		walk(obj(h)["schema"], "#/components/headers/"+name)
	}
	for _, o := range Operations() {
		for _, p := range asList(o.Op["parameters"]) {
			walk(obj(p)["schema"], o.Key()+" parameter")
		}
		for status, r := range obj(o.Op["responses"]) {
			for ct, media := range obj(Resolve(r)["content"]) {
				walk(obj(media)["schema"], o.Key()+" "+status+" "+ct)
			}
			for name, h := range obj(Resolve(r)["headers"]) {
				walk(Resolve(h)["schema"], o.Key()+" "+status+" header "+name)
			}
		}
		for ct, media := range obj(obj(o.Op["requestBody"])["content"]) {
			walk(obj(media)["schema"], o.Key()+" request "+ct)
		}
	}
	sort.Strings(out)
	return out
}
