package textexec

import (
	"errors"
	"strings"
	"testing"
	"text/template"
)

type item struct{ Name string }

func (item) Loud() string { return "LOUD" }

type data struct {
	Title string
	Items []item
	Tags  map[string]int
	Ptr   *item
	None  []item
	Any   any
}

var funcs = template.FuncMap{
	"up":   strings.ToUpper,
	"fail": func(string) (string, error) { return "", errors.New("no") },
	"pair": func(a, b string) string { return a + "=" + b },
}

func run(t *testing.T, src string, d any) (string, error) {
	t.Helper()
	tmpl, err := template.New("t").Funcs(funcs).Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	err = New(tmpl, funcs).Execute(&b, "t", d)
	return b.String(), err
}

var sample = data{Title: "x'y", Items: []item{{"a"}, {"b"}}, Tags: map[string]int{"z": 1, "m": 2, "a": 3},
	Ptr: &item{"p"}, Any: item{"i"}}

// What the bundle templates use renders as text/template renders it.
func TestSameAsTextTemplate(t *testing.T) {
	for _, src := range []string{
		`{{ .Title }}|{{ up .Title }}|{{ .Title | up }}|{{ pair "k" .Title }}|{{ .Title | pair "k" }}`,
		`{{ range .Items }}[{{ .Name }}]{{ end }}{{ range .None }}x{{ else }}none{{ end }}`,
		`{{ range .Tags }}{{ . }},{{ end }}|{{ .Tags.m }}`,
		`{{ if .None }}a{{ else if .Items }}b{{ else }}c{{ end }}|{{ if .Ptr }}{{ .Ptr.Name }}{{ end }}|{{ .Any.Name }}`,
		`{{ define "sub" }}<{{ .Name }}>{{ end }}{{ template "sub" .Ptr }}{{ range .Items }}{{ template "sub" . }}{{ end }}`,
		`{{ or .None "fallback" }}|{{ or .Title "no" }}|{{ printf "%s-%d" .Title 7 }}|{{ (pair "a" "b") }}`,
		`{{- " trimmed " -}}  {{ 3 }} {{ true }}`,
	} {
		want := textTemplate(t, src)
		if got, err := run(t, src, sample); err != nil || got != want {
			t.Errorf("%s\n got %q, %v\nwant %q", src, got, err, want)
		}
	}
}

func textTemplate(t *testing.T, src string) string {
	t.Helper()
	var b strings.Builder
	tmpl := template.Must(template.New("t").Option("missingkey=error").Funcs(funcs).Parse(src))
	if err := tmpl.Execute(&b, sample); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// What it cannot do, it refuses, never guesses: methods, missing keys,
// variables, unknown builtins, failing functions.
func TestRefusals(t *testing.T) {
	for src, want := range map[string]string{
		`{{ .Ptr.Loud }}`:                     "can't evaluate field Loud",
		`{{ .Tags.nope }}`:                    `map has no entry for key "nope"`,
		`{{ .Missing }}`:                      "can't evaluate field Missing",
		`{{ $x := .Title }}{{ $x }}`:          "variables are not supported",
		`{{ index .Items 0 }}`:                `function "index" not defined`,
		`{{ fail .Title }}`:                   "error calling fail: no",
		`{{ up 3 }}`:                          "wrong type for argument 1 of up",
		`{{ with .Ptr }}{{ .Name }}{{ end }}`: "unsupported action",
	} {
		if _, err := run(t, src, sample); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "template: t:1:") {
			t.Errorf("%s: error %v, want one at t:1 saying %q", src, err, want)
		}
	}
}
