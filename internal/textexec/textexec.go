// Package textexec executes templates that text/template parsed, without
// ever looking a method up by name: data is reached through exported
// struct fields and map keys only, functions come from the FuncMap the
// templates were parsed with.
//
// Why: text/template's own executor calls reflect's MethodByName, and a Go
// binary that can call it keeps every exported method of every type it
// ever stores in an interface (the linker cannot tell which one a template
// will name). In a function binary that renders templates this was about
// 2 MiB of AWS SDK, pgx and net/http methods nothing calls. The bundle's
// templates call no methods: their data are plain views.
//
// In: a parsed *template.Template set, its FuncMap, a template's name and
// its data. Out: the text, or an error naming the template and the place.
// The semantics are text/template's for what the templates use: fields
// (a missing map key is an error, as with missingkey=error), pipelines,
// function calls, parenthesized pipelines and chained fields, if/else,
// range over slices, arrays, maps (by sorted key) and ints, with its
// else, template calls, and the builtins or and printf. Anything else
// (variables, with, methods, other builtins) is an error, never a guess.
package textexec

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"text/template"
	"text/template/parse"
)

// maxDepth bounds nested template calls (a template that calls itself).
const maxDepth = 100

// Set is a parsed template set with the functions its templates call.
type Set struct {
	tmpl  *template.Template
	funcs map[string]reflect.Value
}

// New wraps a parsed set; funcs must be the FuncMap it was parsed with.
func New(tmpl *template.Template, funcs template.FuncMap) *Set {
	s := &Set{tmpl: tmpl, funcs: map[string]reflect.Value{}}
	for name, fn := range funcs {
		s.funcs[name] = reflect.ValueOf(fn)
	}
	return s
}

// Execute writes template name applied to data to w.
func (s *Set) Execute(w io.Writer, name string, data any) error {
	st := &state{set: s, w: w}
	return st.template(name, reflect.ValueOf(data), nil)
}

// state is one execution: where it writes, the template being executed
// (for error positions) and how deep template calls go.
type state struct {
	set   *Set
	w     io.Writer
	tree  *parse.Tree
	depth int
}

// template executes the named template with dot; at is the calling node.
func (s *state) template(name string, dot reflect.Value, at parse.Node) error {
	t := s.set.tmpl.Lookup(name)
	if t == nil || t.Tree == nil {
		return s.errorf(at, "no template %q", name)
	}
	if s.depth >= maxDepth {
		return s.errorf(at, "template calls nested deeper than %d", maxDepth)
	}
	caller := s.tree
	s.tree, s.depth = t.Tree, s.depth+1
	err := s.walk(dot, t.Tree.Root)
	s.tree, s.depth = caller, s.depth-1
	return err
}

// errorf is an error at node n of the template being executed.
func (s *state) errorf(n parse.Node, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if n == nil || s.tree == nil {
		return errors.New("template: " + msg)
	}
	location, _ := s.tree.ErrorContext(n)
	return fmt.Errorf("template: %s: %s", location, msg)
}

// walk executes one node of a template's tree.
func (s *state) walk(dot reflect.Value, node parse.Node) error {
	switch n := node.(type) {
	case *parse.ListNode:
		return s.list(dot, n)
	case *parse.TextNode:
		_, err := s.w.Write(n.Text)
		return err
	case *parse.ActionNode:
		return s.action(dot, n)
	case *parse.IfNode:
		return s.ifNode(dot, n)
	case *parse.RangeNode:
		return s.rangeNode(dot, n)
	case *parse.TemplateNode:
		return s.templateNode(dot, n)
	case *parse.CommentNode:
		return nil
	}
	return s.errorf(node, "unsupported action %s", node)
}

func (s *state) list(dot reflect.Value, l *parse.ListNode) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := s.walk(dot, n); err != nil {
			return err
		}
	}
	return nil
}

// action prints its pipeline's value as text/template does (fmt.Fprint of
// the value, pointers followed; "<no value>" for none).
func (s *state) action(dot reflect.Value, n *parse.ActionNode) error {
	v, err := s.pipeline(dot, n.Pipe)
	if err != nil {
		return err
	}
	v = indirect(v)
	if !v.IsValid() {
		_, err = io.WriteString(s.w, "<no value>")
		return err
	}
	_, err = fmt.Fprint(s.w, v.Interface())
	return err
}

func (s *state) ifNode(dot reflect.Value, n *parse.IfNode) error {
	v, err := s.pipeline(dot, n.Pipe)
	if err != nil {
		return err
	}
	if truth(v) {
		return s.list(dot, n.List)
	}
	return s.list(dot, n.ElseList)
}

func (s *state) templateNode(dot reflect.Value, n *parse.TemplateNode) error {
	var v reflect.Value
	if n.Pipe != nil {
		var err error
		if v, err = s.pipeline(dot, n.Pipe); err != nil {
			return err
		}
	}
	return s.template(n.Name, v, n)
}
