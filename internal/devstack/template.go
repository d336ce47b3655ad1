package devstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Template is what the local stack needs from template.yaml: the functions,
// their code directories, environment, timeouts and HTTP API routes.
type Template struct {
	Functions []Function // sorted by LogicalID
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
		Default any `json:"Default"`
	} `json:"Parameters"`
	Globals struct {
		Function samFunctionProps `json:"Function"`
	} `json:"Globals"`
	Resources map[string]struct {
		Type       string           `json:"Type"`
		Properties samFunctionProps `json:"Properties"`
	} `json:"Resources"`
}

type samFunctionProps struct {
	CodeURI     any `json:"CodeUri"`
	Timeout     int `json:"Timeout"`
	MemorySize  int `json:"MemorySize"`
	Environment struct {
		Variables map[string]any `json:"Variables"`
	} `json:"Environment"`
	Events map[string]struct {
		Type       string `json:"Type"`
		Properties struct {
			Path     string `json:"Path"`
			Method   string `json:"Method"`
			Schedule string `json:"Schedule"`
		} `json:"Properties"`
	} `json:"Events"`
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
	var raw samTemplate
	if err := yaml.Unmarshal(longFormIntrinsics(b), &raw); err != nil {
		return nil, fmt.Errorf("parsing template: %w", err)
	}
	params := map[string]string{}
	for name, p := range raw.Parameters {
		if p.Default != nil {
			params[name] = fmt.Sprint(p.Default)
		}
	}
	g := raw.Globals.Function
	t := &Template{}
	var err error
	for id, res := range raw.Resources {
		if res.Type != "AWS::Serverless::Function" {
			continue
		}
		p := res.Properties
		codeURI, ok := p.CodeURI.(string)
		if !ok || codeURI == "" {
			return nil, fmt.Errorf("%s: CodeUri must be a local directory", id)
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
		for name, ev := range p.Events {
			if ev.Type == "Schedule" {
				if f.Schedule, err = parseRate(ev.Properties.Schedule); err != nil {
					return nil, fmt.Errorf("%s.Events.%s: %w", id, name, err)
				}
				continue
			}
			if ev.Type != "HttpApi" {
				continue
			}
			method := strings.ToUpper(ev.Properties.Method)
			if method == "" || ev.Properties.Path == "" {
				return nil, fmt.Errorf("%s.Events.%s: HttpApi events need Path and Method here", id, name)
			}
			f.Routes = append(f.Routes, Route{Method: method, Path: ev.Properties.Path})
		}
		sort.Slice(f.Routes, func(i, j int) bool { return f.Routes[i].Key() < f.Routes[j].Key() })
		t.Functions = append(t.Functions, f)
	}
	if len(t.Functions) == 0 {
		return nil, fmt.Errorf("no AWS::Serverless::Function resources")
	}
	sort.Slice(t.Functions, func(i, j int) bool { return t.Functions[i].LogicalID < t.Functions[j].LogicalID })
	return t, nil
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
	case float64, bool:
		return fmt.Sprint(v)
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			return params[ref]
		}
	}
	return ""
}

// shortFormRE matches a CloudFormation short-form intrinsic with its
// argument on the same line (`KEY: !Ref Name`, `- !GetAtt A.B`).
var shortFormRE = regexp.MustCompile(`^(\s*(?:-\s+)?(?:[^\s#][^#]*?:\s+)?)!(Ref|GetAtt|Sub|ImportValue|Join|Select|Split|If|Equals|Not|And|Or|FindInMap|Base64|Cidr|GetAZs)\s+(.+?)\s*$`)

// longFormIntrinsics rewrites short-form tags (!Ref X) into their long form
// ({"Ref": "X"}), because the YAML decoder we have drops unknown tags and
// with them the difference between a literal and a reference.
func longFormIntrinsics(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		m := shortFormRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		prefix, tag, arg := m[1], m[2], m[3]
		key := "Fn::" + tag
		if tag == "Ref" {
			key = "Ref"
		}
		if !strings.HasPrefix(arg, "[") && !strings.HasPrefix(arg, "{") && !strings.HasPrefix(arg, `"`) && !strings.HasPrefix(arg, "'") {
			if c := strings.Index(arg, " #"); c >= 0 {
				arg = strings.TrimSpace(arg[:c])
			}
			q, _ := json.Marshal(arg)
			arg = string(q)
		}
		lines[i] = prefix + `{"` + key + `": ` + arg + `}`
	}
	return []byte(strings.Join(lines, "\n"))
}
