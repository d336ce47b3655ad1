package textexec

import (
	"fmt"
	"reflect"
	"text/template/parse"
)

var errorType = reflect.TypeFor[error]()

// call calls function id with args, then final (a pipeline's previous
// value) when valid: the builtins or and printf, or one of the FuncMap.
func (s *state) call(dot reflect.Value, id *parse.IdentifierNode, args []parse.Node, final reflect.Value) (reflect.Value, error) {
	switch id.Ident {
	case "or":
		return s.or(dot, args, final)
	case "printf":
		return s.printf(dot, id, args, final)
	}
	fn, ok := s.set.funcs[id.Ident]
	if !ok {
		return reflect.Value{}, s.errorf(id, "function %q not defined", id.Ident)
	}
	in, err := s.operands(dot, args, final)
	if err != nil {
		return reflect.Value{}, err
	}
	if err := s.fit(id, fn.Type(), in); err != nil {
		return reflect.Value{}, err
	}
	return s.result(id, fn.Call(in))
}

// or is the first true operand, else the last; operands after it are not
// evaluated.
func (s *state) or(dot reflect.Value, args []parse.Node, final reflect.Value) (reflect.Value, error) {
	var v reflect.Value
	for _, a := range args {
		var err error
		if v, err = s.arg(dot, a); err != nil || truth(v) {
			return v, err
		}
	}
	if final.IsValid() {
		v = final
	}
	return v, nil
}

func (s *state) printf(dot reflect.Value, id *parse.IdentifierNode, args []parse.Node, final reflect.Value) (reflect.Value, error) {
	in, err := s.operands(dot, args, final)
	if err != nil {
		return reflect.Value{}, err
	}
	if len(in) == 0 || indirect(in[0]).Kind() != reflect.String {
		return reflect.Value{}, s.errorf(id, "printf needs a format string")
	}
	rest := make([]any, len(in)-1)
	for i, v := range in[1:] {
		if v.IsValid() {
			rest[i] = v.Interface()
		}
	}
	return reflect.ValueOf(fmt.Sprintf(indirect(in[0]).String(), rest...)), nil
}

// operands evaluates args, then appends final when valid.
func (s *state) operands(dot reflect.Value, args []parse.Node, final reflect.Value) ([]reflect.Value, error) {
	var in []reflect.Value
	for _, a := range args {
		v, err := s.arg(dot, a)
		if err != nil {
			return nil, err
		}
		in = append(in, v)
	}
	if final.IsValid() {
		in = append(in, final)
	}
	return in, nil
}

// fit makes in the arguments of a function of type ft, as text/template
// does: a value assignable to its parameter, or one that holds one (an
// interface, a pointer); a missing value is the parameter's zero.
func (s *state) fit(id parse.Node, ft reflect.Type, in []reflect.Value) error {
	if ft.IsVariadic() || ft.NumIn() != len(in) {
		return s.errorf(id, "wrong number of arguments for %s: want %d, got %d", id, ft.NumIn(), len(in))
	}
	for i, v := range in {
		want := ft.In(i)
		switch {
		case !v.IsValid():
			in[i] = reflect.Zero(want)
		case v.Type().AssignableTo(want):
		case indirect(v).IsValid() && indirect(v).Type().AssignableTo(want):
			in[i] = indirect(v)
		default:
			return s.errorf(id, "wrong type for argument %d of %s: want %s, got %s", i+1, id, want, v.Type())
		}
	}
	return nil
}

// result is a call's value; a non-nil error as its second result fails the
// execution.
func (s *state) result(id parse.Node, out []reflect.Value) (reflect.Value, error) {
	if len(out) == 2 && out[1].Type() == errorType && !out[1].IsNil() {
		return reflect.Value{}, s.errorf(id, "error calling %s: %v", id, out[1].Interface())
	}
	if len(out) == 0 {
		return reflect.Value{}, nil
	}
	return out[0], nil
}
