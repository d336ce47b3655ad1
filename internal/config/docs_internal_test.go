package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sdkVariables are the AWS SDK's settings AWSFromLookup reads: documented
// beside the table's variables, but not in it (the SDK owns their meaning).
var sdkVariables = []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"}

// docRow is one row of the configuration table in docs/CONFIGURATION.md.
type docRow struct {
	names []string
	def   string // the default column's text
}

var docName = regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")

func configurationDocs(t *testing.T) []docRow {
	t.Helper()
	text, err := os.ReadFile("../../docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "# Configuration (environment; `internal/config`)\n")
	if !ok {
		t.Fatal("docs/CONFIGURATION.md has no configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []docRow
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.TrimSpace(line), " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		row := docRow{def: strings.TrimSuffix(cells[len(cells)-1], " |")}
		for _, m := range docName.FindAllStringSubmatch(cells[0], -1) {
			row.names = append(row.names, m[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// The documented variables are the table's (and the SDK's), each once.
func TestDocsListEveryVariable(t *testing.T) {
	documented := map[string]int{}
	for _, r := range configurationDocs(t) {
		for _, name := range r.names {
			documented[name]++
		}
	}
	for _, v := range everyVariable {
		if n := documented[v.name]; n != 1 {
			t.Errorf("docs/CONFIGURATION.md documents %s %d times, want once", v.name, n)
		}
	}
	for name := range documented {
		if _, ok := lookupVariable(name); !ok && !slices.Contains(sdkVariables, name) {
			t.Errorf("docs/CONFIGURATION.md documents %s, which the configuration does not read", name)
		}
	}
}

// A documented default means what the table's does: both load to the same
// value (so `8760h` documents 8760h0m0s). Rows of several variables name
// where their defaults come from instead.
func TestDocsDefaultsAreTheTables(t *testing.T) {
	for _, r := range configurationDocs(t) {
		v, ok := lookupVariable(r.names[0])
		if !ok || len(r.names) > 1 || v.def == "" {
			continue
		}
		doc, ok := strings.CutPrefix(r.def, "`")
		doc, ok2 := strings.CutSuffix(doc, "`")
		var fromDocs, fromTable Config
		if !ok || !ok2 || v.load(&fromDocs, doc) != nil || v.load(&fromTable, v.def) != nil || !reflect.DeepEqual(fromDocs, fromTable) {
			t.Errorf("docs/CONFIGURATION.md gives %s the default %s; the table's is %q", v.name, r.def, v.def)
		}
	}
}
