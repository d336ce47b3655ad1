package templaterules

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// cfnTemplate is template.yaml as generic values, with CloudFormation's
// short-form tags in their long form (!Ref X is {"Ref": "X"}, !If [...] is
// {"Fn::If": [...]}), so a reference never reads as a literal.
type cfnTemplate struct {
	Parameters map[string]map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]resource
}

type resource struct {
	Type       string
	Condition  string
	Properties map[string]any
}

func loadTemplate(t *testing.T) *cfnTemplate {
	t.Helper()
	b, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	root, ok := longForm(t, &doc).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	tmpl := &cfnTemplate{Resources: map[string]resource{}, Parameters: map[string]map[string]any{}}
	for name, p := range mapAt(root, "Parameters") {
		tmpl.Parameters[name], _ = p.(map[string]any)
	}
	tmpl.Conditions = mapAt(root, "Conditions")
	tmpl.Globals = mapAt(root, "Globals", "Function")
	for id, r := range mapAt(root, "Resources") {
		m, _ := r.(map[string]any)
		typ, _ := m["Type"].(string)
		cond, _ := m["Condition"].(string)
		props, _ := m["Properties"].(map[string]any)
		tmpl.Resources[id] = resource{Type: typ, Condition: cond, Properties: props}
	}
	return tmpl
}

// longForm converts a YAML node to plain values, tags to intrinsics.
func longForm(t *testing.T, n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return longForm(t, n.Content[0])
	case yaml.AliasNode:
		t.Fatal("template.yaml: CloudFormation does not support YAML aliases")
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = longForm(t, n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = longForm(t, c)
		}
		v = s
	case yaml.ScalarNode:
		plain := *n
		if isIntrinsic(n.Tag) {
			plain.Tag = "!!str"
		}
		if err := plain.Decode(&v); err != nil {
			t.Fatalf("template.yaml line %d: %v", n.Line, err)
		}
	}
	if !isIntrinsic(n.Tag) {
		return v
	}
	name := strings.TrimPrefix(n.Tag, "!")
	if name == "Ref" {
		return map[string]any{"Ref": v}
	}
	if s, ok := v.(string); ok && name == "GetAtt" { // !GetAtt A.B is ["A", "B"]
		a, b, _ := strings.Cut(s, ".")
		v = []any{a, b}
	}
	return map[string]any{"Fn::" + name: v}
}

func isIntrinsic(tag string) bool {
	return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!")
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
