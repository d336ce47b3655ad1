package samtemplate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
)

// Every route of template.yaml is an operation of the OpenAPI document, and
// every operation is a route of template.yaml.
func TestOpenAPIMatchesTemplate(t *testing.T) {
	tmpl, err := LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var routes, doc []string
	for _, f := range tmpl.Functions {
		for _, r := range f.Routes {
			routes = append(routes, r.Key())
		}
	}
	for _, o := range apidocstest.Operations() {
		doc = append(doc, o.Key())
	}
	slices.Sort(routes)
	if !slices.Equal(routes, doc) {
		t.Fatalf("template.yaml %v\nopenapi.json  %v", routes, doc)
	}
}
