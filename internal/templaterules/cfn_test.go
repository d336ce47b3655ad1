package templaterules

import (
	"os"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// cfnTemplate is template.yaml as generic values, with CloudFormation's
// short-form tags in their long form (!Ref X is {"Ref": "X"}, !If [...] is
// {"Fn::If": [...]}, by samtemplate.LongForm, the one reader of the template),
// so a reference never reads as a literal.
type cfnTemplate struct {
	Parameters map[string]map[string]any
	Rules      map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]resource
}

type resource struct {
	Type                string
	Condition           string
	DeletionPolicy      string
	UpdateReplacePolicy string
	DependsOn           any
	Metadata            map[string]any
	Properties          map[string]any
}

func loadTemplate(t *testing.T) *cfnTemplate {
	t.Helper()
	b, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := samtemplate.LongForm(b)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	var root map[string]any
	if err := doc.Decode(&root); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	tmpl := &cfnTemplate{Resources: map[string]resource{}, Parameters: map[string]map[string]any{}}
	for name, p := range mapAt(root, "Parameters") {
		tmpl.Parameters[name], _ = p.(map[string]any)
	}
	tmpl.Conditions = mapAt(root, "Conditions")
	tmpl.Rules = mapAt(root, "Rules")
	tmpl.Globals = mapAt(root, "Globals", "Function")
	for id, r := range mapAt(root, "Resources") {
		m, _ := r.(map[string]any)
		typ, _ := m["Type"].(string)
		r := resource{Type: typ, DependsOn: m["DependsOn"]}
		r.Condition, _ = m["Condition"].(string)
		r.DeletionPolicy, _ = m["DeletionPolicy"].(string)
		r.UpdateReplacePolicy, _ = m["UpdateReplacePolicy"].(string)
		r.Properties, _ = m["Properties"].(map[string]any)
		r.Metadata, _ = m["Metadata"].(map[string]any)
		tmpl.Resources[id] = r
	}
	return tmpl
}

// mapAt walks nested mappings; a missing step is an empty map.
func mapAt(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, _ := m[p].(map[string]any)
		m = next
	}
	if m == nil {
		return map[string]any{}
	}
	return m
}

// ofType returns the resources of one type, by logical id.
func (c *cfnTemplate) ofType(typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range c.Resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// prop is a function's property, else Globals'.
func (c *cfnTemplate) prop(fn resource, name string) any {
	if v, ok := fn.Properties[name]; ok {
		return v
	}
	return c.Globals[name]
}

// env is a function's environment with Globals merged in.
func (c *cfnTemplate) env(fn resource) map[string]any {
	out := map[string]any{}
	for _, m := range []map[string]any{mapAt(c.Globals, "Environment", "Variables"), mapAt(fn.Properties, "Environment", "Variables")} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// timeoutSeconds is a function's Timeout, else Globals'.
func (c *cfnTemplate) timeoutSeconds(fn resource) int {
	if n, ok := fn.Properties["Timeout"].(int); ok {
		return n
	}
	n, _ := c.Globals["Timeout"].(int)
	return n
}

// isRef reports whether v is {"Ref": name}.
func isRef(v any, name string) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["Ref"] == name
}

// isGetAtt reports whether v is {"Fn::GetAtt": [id, attr]}.
func isGetAtt(v any, id, attr string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	s, ok := m["Fn::GetAtt"].([]any)
	return ok && len(s) == 2 && s[0] == id && s[1] == attr
}
