// Package validation is the shape of k8sapi's validation tables: each row
// names a field path, says whether the value passes, and what is wrong when
// it does not. Errors turns a table into every failing row, in table order,
// as "field: message", so one bad request says everything wrong with it.
//
// In: rows built from the value under check. Out: one error per failing
// row. The rules themselves live beside what they check
// (internal/bundle/input.go, internal/clusterspec/request.go).
package validation

import (
	"errors"
	"fmt"
)

// Rule is one row of a validation table.
type Rule struct {
	Field   string // the field path, e.g. "nodes[2].ipv4"
	OK      bool   // whether the value passes
	Message string // what is wrong when it does not
}

// Check is a row of a table: field, whether its value passes, and the
// message when it does not. (A constructor, so tables in other packages
// stay one short line a row.)
func Check(field string, ok bool, message string) Rule {
	return Rule{Field: field, OK: ok, Message: message}
}

// Errors returns the failing rows of the tables, in order, as
// "field: message".
func Errors(tables ...[]Rule) []error {
	var errs []error
	for _, table := range tables {
		for _, r := range table {
			if !r.OK {
				errs = append(errs, fmt.Errorf("%s: %s", r.Field, r.Message))
			}
		}
	}
	return errs
}

// Join is Errors as one error (nil when every row passes).
func Join(tables ...[]Rule) error { return errors.Join(Errors(tables...)...) }

// Describe is the message of err, or "" for nil: for rows whose check is a
// function that explains itself.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
