package templaterules

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// samconfig is samconfig.toml: environment → command → parameters.
type samconfig map[string]map[string]struct {
	Parameters map[string]any `toml:"parameters"`
}

func loadSamconfig(t *testing.T) samconfig {
	t.Helper()
	var cfg samconfig
	if _, err := toml.DecodeFile("../../samconfig.toml", &cfg); err != nil {
		t.Fatalf("samconfig.toml: %v", err)
	}
	return cfg
}

// stages are the environments `sam deploy --config-env` takes.
var stages = []string{"dev", "staging", "prod"}

// No environment builds from SAM's cache: it hashes only CodeUri (each
// function's main.go), so a change under internal/ would ship a stale
// binary without a word.
func TestSamconfigNeverCachesBuilds(t *testing.T) {
	for env, cmds := range loadSamconfig(t) {
		if cached, ok := cmds["build"].Parameters["cached"]; ok && cached != false {
			t.Errorf("[%s.build.parameters] cached = %v", env, cached)
		}
	}
}

// Each stage is its own stack with every parameter the template requires,
// names only parameters the template has, gives the name nodes renew
// against, and production deploys by canary.
func TestSamconfigHasOneEnvironmentPerStage(t *testing.T) {
	cfg, c := loadSamconfig(t), loadTemplate(t)
	names := map[string]bool{}
	for _, stage := range stages {
		name, _ := cfg[stage]["global"].Parameters["stack_name"].(string)
		if name == "" || names[name] {
			t.Errorf("%s: stack_name %q, want one of its own", stage, name)
		}
		names[name] = true
		given := overrides(t, cfg[stage]["deploy"].Parameters)
		for p, def := range c.Parameters {
			if _, hasDefault := def["Default"]; !hasDefault && given[p] == "" {
				t.Errorf("%s: no value for required parameter %s", stage, p)
			}
		}
		for p := range given {
			if _, ok := c.Parameters[p]; !ok {
				t.Errorf("%s: parameter %s is not in template.yaml", stage, p)
			}
		}
		if given["ApiDomainName"] == "" && !strings.HasPrefix(given["BootstrapBaseUrl"], "https://") {
			t.Errorf("%s: neither ApiDomainName nor BootstrapBaseUrl", stage)
		}
		if caps, _ := cfg[stage]["deploy"].Parameters["capabilities"].(string); caps != "CAPABILITY_IAM" {
			t.Errorf("%s: capabilities %q", stage, caps)
		}
	}
	if d := overrides(t, cfg["prod"]["deploy"].Parameters)["DeploymentType"]; !strings.HasPrefix(d, "Canary") {
		t.Errorf("prod deploys with %q, want a canary", d)
	}
}

// overrides is parameter_overrides as a map (each "Name=value").
func overrides(t *testing.T, params map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := params["parameter_overrides"].([]any)
	for _, o := range list {
		k, v, ok := strings.Cut(o.(string), "=")
		if !ok || k == "" {
			t.Errorf("parameter override %q", o)
		}
		out[k] = v
	}
	return out
}
