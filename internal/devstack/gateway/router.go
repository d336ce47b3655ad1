package gateway

import (
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// router matches requests to HttpApi routes the way API Gateway does: the
// most specific route wins (more literal segments; a plain {param} before a
// greedy {param+}; an exact method before ANY).
type router struct {
	routes []boundRoute
}

type boundRoute struct {
	samtemplate.Route
	function string
	segments []string
}

func newRouter(t *samtemplate.Template) *router {
	r := &router{}
	for _, f := range t.Functions {
		for _, rt := range f.Routes {
			r.routes = append(r.routes, boundRoute{Route: rt, function: f.LogicalID, segments: splitPath(rt.Path)})
		}
	}
	return r
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// match returns the function and route for method and (unescaped) path, with
// the path parameters.
func (r *router) match(method, path string) (function string, route samtemplate.Route, params map[string]string, ok bool) {
	segs := splitPath(path)
	bestScore := -1
	for _, br := range r.routes {
		if br.Method != method && br.Method != "ANY" {
			continue
		}
		p, score, hit := matchSegments(br.segments, segs)
		if !hit {
			continue
		}
		if br.Method != "ANY" {
			score++ // exact method beats ANY at equal path specificity
		}
		if score > bestScore {
			bestScore, function, route, params, ok = score, br.function, br.Route, p, true
		}
	}
	return function, route, params, ok
}

// allowed lists the methods of the routes whose path matches path, sorted:
// what a 405's Allow names.
func (r *router) allowed(path string) []string {
	segs := splitPath(path)
	var methods []string
	for _, br := range r.routes {
		if _, _, hit := matchSegments(br.segments, segs); hit && !slices.Contains(methods, br.Method) {
			methods = append(methods, br.Method)
		}
	}
	slices.Sort(methods)
	return methods
}

// matchSegments scores a match: 4 per literal segment, 2 per {param}, 0 for
// a greedy {param+}, so literal > param > greedy at every position.
func matchSegments(pattern, segs []string) (map[string]string, int, bool) {
	params := map[string]string{}
	score := 0
	for i, pat := range pattern {
		name, isParam := strings.CutPrefix(pat, "{")
		name, _ = strings.CutSuffix(name, "}")
		if isParam && strings.HasSuffix(name, "+") {
			if i >= len(segs) {
				return nil, 0, false // greedy needs at least one segment
			}
			params[strings.TrimSuffix(name, "+")] = strings.Join(segs[i:], "/")
			return params, score, true
		}
		if i >= len(segs) {
			return nil, 0, false
		}
		switch {
		case isParam:
			if segs[i] == "" {
				return nil, 0, false
			}
			params[name] = segs[i]
			score += 2
		case pat == segs[i]:
			score += 4
		default:
			return nil, 0, false
		}
	}
	if len(segs) != len(pattern) {
		return nil, 0, false
	}
	return params, score, true
}
