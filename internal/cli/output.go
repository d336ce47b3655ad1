package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// output is -o: a table (plain or wide, as kubectl prints them) or the
// API's own JSON, or that JSON as YAML.
type output string

const (
	outputTable output = ""
	outputWide  output = "wide"
	outputJSON  output = "json"
	outputYAML  output = "yaml"
)

func addOutputFlag(cmd *cobra.Command, o *output, formats ...output) {
	names := []string{}
	for _, f := range formats {
		names = append(names, string(f))
	}
	cmd.Flags().StringVarP((*string)(o), "output", "o", "", "output format: "+strings.Join(names, "|"))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
	cmd.PreRunE = func(*cobra.Command, []string) error { return o.check(formats) }
}

func (o output) check(formats []output) error {
	for _, f := range append(formats, outputTable) {
		if o == f {
			return nil
		}
	}
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return usageErrorf("unknown output format %q: -o is one of %s (a table when absent)", string(o), strings.Join(names, ", "))
}

// structured is whether o prints the API's document rather than a table.
func (o output) structured() bool { return o == outputJSON || o == outputYAML }

// printDocument prints an API document (raw JSON) as JSON or YAML.
func (o output) printDocument(w io.Writer, raw []byte) error {
	if o == outputYAML {
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// table is a kubectl-style table: upper-case headers, columns three
// spaces apart.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)}
	t.row(headers...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// age is how long ago t was, as kubectl's AGE column shows it.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "<unknown>"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// orNone shows an empty value as kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
