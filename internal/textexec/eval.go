package textexec

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"text/template/parse"
)

// rangeNode runs its list once per element, dot the element (a map's in
// sorted key order), or its else list when there is none.
func (s *state) rangeNode(dot reflect.Value, n *parse.RangeNode) error {
	if len(n.Pipe.Decl) > 0 {
		return s.errorf(n, "range variables are not supported")
	}
	v, err := s.pipeline(dot, n.Pipe)
	if err != nil {
		return err
	}
	elems, err := s.elements(n, indirect(v))
	if err != nil {
		return err
	}
	if len(elems) == 0 {
		return s.list(dot, n.ElseList)
	}
	for _, e := range elems {
		if err := s.list(e, n.List); err != nil {
			return err
		}
	}
	return nil
}

// elements are what range visits in v.
func (s *state) elements(n parse.Node, v reflect.Value) ([]reflect.Value, error) {
	var out []reflect.Value
	switch v.Kind() {
	case reflect.Invalid:
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, compareKeys)
		for _, k := range keys {
			out = append(out, v.MapIndex(k))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		for i := range v.Int() {
			out = append(out, reflect.ValueOf(int(i)))
		}
	default:
		return nil, s.errorf(n, "range can't iterate over %s", v.Type())
	}
	return out, nil
}

// compareKeys orders map keys as text/template does for the kinds a key
// may be here: strings and integers.
func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.String:
		return cmp.Compare(a.String(), b.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp.Compare(a.Int(), b.Int())
	}
	return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
}

// pipeline runs each command, passing each one's value to the next as its
// last argument.
func (s *state) pipeline(dot reflect.Value, p *parse.PipeNode) (reflect.Value, error) {
	if len(p.Decl) > 0 {
		return reflect.Value{}, s.errorf(p, "variables are not supported")
	}
	var final reflect.Value
	for _, c := range p.Cmds {
		v, err := s.command(dot, c, final)
		if err != nil {
			return v, err
		}
		final = v
	}
	return final, nil
}

// command evaluates one command; final is the previous command's value
// (invalid for the first).
func (s *state) command(dot reflect.Value, c *parse.CommandNode, final reflect.Value) (reflect.Value, error) {
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		return s.call(dot, id, c.Args[1:], final)
	}
	if len(c.Args) > 1 || final.IsValid() {
		return reflect.Value{}, s.errorf(c, "%s takes no arguments", c.Args[0])
	}
	return s.arg(dot, c.Args[0])
}

// arg evaluates one operand.
func (s *state) arg(dot reflect.Value, n parse.Node) (reflect.Value, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return s.fields(n, dot, n.Ident)
	case *parse.ChainNode:
		v, err := s.arg(dot, n.Node)
		if err != nil {
			return v, err
		}
		return s.fields(n, v, n.Field)
	case *parse.PipeNode:
		return s.pipeline(dot, n)
	case *parse.IdentifierNode:
		return s.call(dot, n, nil, reflect.Value{})
	case *parse.StringNode:
		return reflect.ValueOf(n.Text), nil
	case *parse.BoolNode:
		return reflect.ValueOf(n.True), nil
	case *parse.NumberNode:
		return number(n), nil
	case *parse.NilNode:
		return reflect.Value{}, nil
	}
	return reflect.Value{}, s.errorf(n, "unsupported operand %s", n)
}

func number(n *parse.NumberNode) reflect.Value {
	switch {
	case n.IsInt:
		return reflect.ValueOf(int(n.Int64))
	case n.IsFloat:
		return reflect.ValueOf(n.Float64)
	}
	return reflect.ValueOf(n.Uint64)
}

// fields follows names from v: exported struct fields and map keys.
func (s *state) fields(n parse.Node, v reflect.Value, names []string) (reflect.Value, error) {
	for _, name := range names {
		next, err := field(indirect(v), name)
		if err != nil {
			return next, s.errorf(n, "%v", err)
		}
		v = next
	}
	return v, nil
}

// field is v's field or map entry name; never a method.
func field(v reflect.Value, name string) (reflect.Value, error) {
	switch v.Kind() {
	case reflect.Struct:
		if f, ok := v.Type().FieldByName(name); ok && f.IsExported() {
			return v.FieldByIndex(f.Index), nil
		}
		return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s", name, v.Type())
	case reflect.Map:
		key := reflect.ValueOf(name)
		if !key.Type().AssignableTo(v.Type().Key()) {
			key = key.Convert(v.Type().Key())
		}
		if e := v.MapIndex(key); e.IsValid() {
			return e, nil
		}
		return reflect.Value{}, fmt.Errorf("map has no entry for key %q", name)
	case reflect.Invalid:
		return reflect.Value{}, fmt.Errorf("nil data; no entry for key %q", name)
	}
	return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s", name, v.Type())
}

// indirect follows pointers and interfaces to the value they hold.
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// truth is text/template's: a zero value, an empty collection or a nil
// pointer is false; a struct is true.
func truth(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	case reflect.Struct:
		return true
	}
	return !v.IsZero()
}
