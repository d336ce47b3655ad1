package samtemplate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Template is what the local stack needs from template.yaml: the functions,
// their code directories, environment, timeouts and HTTP API routes.
type Template struct {
	Functions []Function // sorted by LogicalID
	// Hooks are the functions CodeDeploy runs around a deployment (a
	// DeploymentPreference's Hooks): built like the others, never served by
	// the local stack, which applies the migrations itself.
	Hooks []Function
	// Parameters are the template's parameters' defaults, by name.
	Parameters map[string]string
}

// Function is one AWS::Serverless::Function with Globals merged in.
type Function struct {
	LogicalID  string
	CodeURI    string            // e.g. functions/health, relative to the template
	Timeout    time.Duration     // Properties.Timeout, else Globals, else 3 s (Lambda's default)
	MemorySize int               // MB, as Lambda reports it to the runtime
	Env        map[string]string // literal values, !Ref to a parameter resolved to its Default, else ""
	Routes     []Route
	// Schedule is the period of its Schedule event (rate(...)); 0 when it
	// has none. The local stack runs it more often (see LocalSchedule).
	Schedule time.Duration
}

// Route is one HttpApi event: Method (upper case, or ANY) and Path, which may
// hold {name} parameters and a final greedy {name+}.
type Route struct {
	Method string
	Path   string
}

// Key is the API Gateway route key, e.g. "GET /clusters/{id}".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Function returns the function with the logical id.
func (t *Template) Function(logicalID string) (Function, bool) {
	for _, f := range t.Functions {
		if f.LogicalID == logicalID {
			return f, true
		}
	}
	return Function{}, false
}

// the subset of the SAM schema we read.
type samTemplate struct {
	Parameters map[string]struct {
		Default any `yaml:"Default"`
	} `yaml:"Parameters"`
	Globals struct {
		Function samFunctionProps `yaml:"Function"`
	} `yaml:"Globals"`
	Resources map[string]struct {
		Type       string           `yaml:"Type"`
		Properties samFunctionProps `yaml:"Properties"`
	} `yaml:"Resources"`
}

type samFunctionProps struct {
	CodeURI     any `yaml:"CodeUri"`
	Timeout     int `yaml:"Timeout"`
	MemorySize  int `yaml:"MemorySize"`
	Environment struct {
		Variables map[string]any `yaml:"Variables"`
	} `yaml:"Environment"`
	DeploymentPreference struct {
		Hooks map[string]any `yaml:"Hooks"`
	} `yaml:"DeploymentPreference"`
	Events map[string]struct {
		Type       string `yaml:"Type"`
		Properties struct {
			Path     string `yaml:"Path"`
			Method   string `yaml:"Method"`
			Schedule string `yaml:"Schedule"`
		} `yaml:"Properties"`
	} `yaml:"Events"`
}

// LoadTemplate reads a SAM template file.
func LoadTemplate(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading template: %w", err)
	}
	t, err := ParseTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return t, nil
}

// ParseTemplate parses a SAM template.
func ParseTemplate(b []byte) (*Template, error) {
	doc, err := LongForm(b)
	if err != nil {
		return nil, err
	}
	var raw samTemplate
	if err := doc.Decode(&raw); err != nil {
		return nil, fmt.Errorf("parsing template: %w", err)
	}
	params := map[string]string{}
	for name, p := range raw.Parameters {
		if p.Default != nil {
			params[name] = fmt.Sprint(p.Default)
		}
	}
	t := &Template{Parameters: params}
	hooks := hookIDs(raw)
	for id, res := range raw.Resources {
		if res.Type != "AWS::Serverless::Function" {
			continue
		}
		f, err := samFunction(id, res.Properties, raw.Globals.Function, params)
		if err != nil {
			return nil, err
		}
		if hooks[id] {
			t.Hooks = append(t.Hooks, f)
		} else {
			t.Functions = append(t.Functions, f)
		}
	}
	sort.Slice(t.Hooks, func(i, j int) bool { return t.Hooks[i].LogicalID < t.Hooks[j].LogicalID })
	if len(t.Functions) == 0 {
		return nil, fmt.Errorf("no AWS::Serverless::Function resources")
	}
	sort.Slice(t.Functions, func(i, j int) bool { return t.Functions[i].LogicalID < t.Functions[j].LogicalID })
	return t, nil
}

// hookIDs are the functions a DeploymentPreference names as a hook (!Ref).
func hookIDs(raw samTemplate) map[string]bool {
	ids := map[string]bool{}
	for _, res := range raw.Resources {
		for _, h := range res.Properties.DeploymentPreference.Hooks {
			if ref, ok := h.(map[string]any)["Ref"].(string); ok {
				ids[ref] = true
			}
		}
	}
	return ids
}

// samFunction is one function resource as `sam local` runs it: its
// properties over the Globals, environment values resolved with params.
func samFunction(id string, p, g samFunctionProps, params map[string]string) (Function, error) {
	codeURI, ok := p.CodeURI.(string)
	if !ok || codeURI == "" {
		return Function{}, fmt.Errorf("%s: CodeUri must be a local directory", id)
	}
	f := Function{
		LogicalID:  id,
		CodeURI:    filepath.ToSlash(filepath.Clean(codeURI)),
		Timeout:    time.Duration(firstNonZero(p.Timeout, g.Timeout, 3)) * time.Second,
		MemorySize: firstNonZero(p.MemorySize, g.MemorySize, 128),
		Env:        map[string]string{},
	}
	for _, vars := range []map[string]any{g.Environment.Variables, p.Environment.Variables} {
		for k, v := range vars {
			f.Env[k] = resolveValue(v, params)
		}
	}
	if err := f.addEvents(id, p); err != nil {
		return Function{}, err
	}
	sort.Slice(f.Routes, func(i, j int) bool { return f.Routes[i].Key() < f.Routes[j].Key() })
	return f, nil
}

// addEvents takes the events local runs serve: HttpApi routes and
// Schedule rates; others are left to AWS.
func (f *Function) addEvents(id string, p samFunctionProps) error {
	for name, ev := range p.Events {
		switch ev.Type {
		case "Schedule":
			rate, err := parseRate(ev.Properties.Schedule)
			if err != nil {
				return fmt.Errorf("%s.Events.%s: %w", id, name, err)
			}
			f.Schedule = rate
		case "HttpApi":
			method := strings.ToUpper(ev.Properties.Method)
			if method == "" || ev.Properties.Path == "" {
				return fmt.Errorf("%s.Events.%s: HttpApi events need Path and Method here", id, name)
			}
			f.Routes = append(f.Routes, Route{Method: method, Path: ev.Properties.Path})
		}
	}
	return nil
}

// rateRE is a Schedule event's rate expression, the only form we read:
// cron expressions have no single period.
var rateRE = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

func parseRate(expr string) (time.Duration, error) {
	m := rateRE.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule %q: only rate(N minute|minutes|hour|hours|day|days) is supported here", expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
	return time.Duration(n) * unit, nil
}

func firstNonZero(vals ...int) int {
	for _, v := range vals {
		if v != 0 {
			return v
		}
	}
	return 0
}

// resolveValue is what `sam local` does with an environment value: literals
// as they are, !Ref of a parameter as its default, anything else (resource
// attributes, !Sub) unresolvable locally and so empty, to be overridden.
func resolveValue(v any, params map[string]string) string {
	switch v := v.(type) {
	case string:
		return v
	case int, float64, bool:
		return fmt.Sprint(v)
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			return params[ref]
		}
	}
	return ""
}

// LongForm parses a CloudFormation template with every short-form
// intrinsic in its long form (see longFormIntrinsics), ready to decode.
func LongForm(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parsing template: %w", err)
	}
	longFormIntrinsics(&doc)
	return &doc, nil
}

// longFormIntrinsics rewrites every short-form intrinsic (a local tag such
// as !Ref X or !GetAtt A.B) into its long form ({Ref: X}, {Fn::GetAtt:
// A.B}), so decoding keeps the difference between a literal and a
// reference.
func longFormIntrinsics(n *yaml.Node) {
	for _, child := range n.Content {
		longFormIntrinsics(child)
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return
	}
	name := strings.TrimPrefix(n.Tag, "!")
	key := "Fn::" + name
	if name == "Ref" {
		key = "Ref"
	}
	value := *n
	value.Tag = ""                                     // the argument as written: a scalar, a list or a map
	if name == "GetAtt" && n.Kind == yaml.ScalarNode { // !GetAtt A.B is [A, B]
		id, attr, _ := strings.Cut(n.Value, ".")
		value = yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: id}, {Kind: yaml.ScalarNode, Value: attr},
		}}
	}
	*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &value,
	}}
}
