package gateway

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// projectRoot is the module root: template.yaml, events/.
const projectRoot = "../../.."

// Every route of template.yaml has a sample event in events/, and every event
// is a valid payload 2.0 event for a route that exists, with the path
// parameters that route yields.
func TestEventsCoverEveryRoute(t *testing.T) {
	tmpl, err := samtemplate.LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRouter(tmpl)
	files, _ := filepath.Glob(filepath.Join(projectRoot, "events", "*.json"))
	covered := map[string]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		fn, route, params, ok := r.match(ev.RequestContext.HTTP.Method, ev.RawPath)
		switch {
		case ev.Version != "2.0":
			t.Errorf("%s: version %q", file, ev.Version)
		case !ok || route.Key() != ev.RouteKey || ev.RequestContext.RouteKey != ev.RouteKey:
			t.Errorf("%s: %s %s routes to %q, the event says %q", file, ev.RequestContext.HTTP.Method, ev.RawPath, route.Key(), ev.RouteKey)
		case !maps.Equal(params, ev.PathParameters) && len(params)+len(ev.PathParameters) > 0:
			t.Errorf("%s: pathParameters %v, the route yields %v", file, ev.PathParameters, params)
		case ev.RequestContext.HTTP.Path != ev.RawPath || ev.RequestContext.RequestID == "":
			t.Errorf("%s: requestContext inconsistent", file)
		default:
			covered[fn+" "+route.Key()] = true
		}
	}
	for _, f := range tmpl.Functions {
		for _, rt := range f.Routes {
			if !covered[f.LogicalID+" "+rt.Key()] {
				t.Errorf("no event in events/ for %s (%s)", rt.Key(), f.LogicalID)
			}
		}
	}
}

func TestRouterPrefersTheMostSpecificRoute(t *testing.T) {
	tmpl := &samtemplate.Template{Functions: []samtemplate.Function{
		{LogicalID: "A", Routes: []samtemplate.Route{{Method: "GET", Path: "/clusters"}, {Method: "GET", Path: "/clusters/{id}"}, {Method: "ANY", Path: "/echo/{x}"}, {Method: "GET", Path: "/echo/fixed"}}},
		{LogicalID: "B", Routes: []samtemplate.Route{{Method: "ANY", Path: "/files/{path+}"}, {Method: "DELETE", Path: "/clusters/{id}"}}},
	}}
	r := newRouter(tmpl)
	for _, tc := range []struct{ method, path, fn, key, params string }{
		{"GET", "/clusters", "A", "GET /clusters", ""},
		{"GET", "/clusters/", "A", "GET /clusters", ""},
		{"GET", "/clusters/7", "A", "GET /clusters/{id}", "id=7"},
		{"DELETE", "/clusters/7", "B", "DELETE /clusters/{id}", "id=7"},
		{"GET", "/echo/fixed", "A", "GET /echo/fixed", ""},
		{"POST", "/echo/fixed", "A", "ANY /echo/{x}", "x=fixed"},
		{"GET", "/files/a/b/c", "B", "ANY /files/{path+}", "path=a/b/c"},
	} {
		fn, route, params, ok := r.match(tc.method, tc.path)
		var got []string
		for k, v := range params {
			got = append(got, k+"="+v)
		}
		if !ok || fn != tc.fn || route.Key() != tc.key || strings.Join(got, ",") != tc.params {
			t.Errorf("%s %s: got %v %s %s %v", tc.method, tc.path, ok, fn, route.Key(), got)
		}
	}
	for _, miss := range [][2]string{{"PUT", "/clusters"}, {"GET", "/clusters/7/x"}, {"GET", "/files"}, {"GET", "/"}} {
		if _, _, _, ok := r.match(miss[0], miss[1]); ok {
			t.Errorf("%s %s matched", miss[0], miss[1])
		}
	}
}
