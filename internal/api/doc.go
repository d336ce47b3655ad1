// Package api is k8sapi's HTTP surface: the route table, handlers, JSON
// errors and request limits. It holds no SQL and no crypto: handlers parse
// and authenticate, call a use case through a narrow interface, and write
// JSON. Errors are answered in one place (errors.go), each with the status
// its apperr code's kind has.
//
// Each Lambda function serves the subset of Routes whose Function is its
// logical id in template.yaml (a test keeps the two equal).
package api
