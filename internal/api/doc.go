// Package api is k8sapi's HTTP surface: the route table, handlers, JSON
// errors and request limits. It holds no SQL and no crypto: handlers parse
// and authenticate, call a use case through a narrow interface, and write
// JSON. Errors are answered in one place (errors.go), each with the status
// its apperr code's kind has.
//
// The route table is one part per Lambda function (routes.go: Function,
// named by its logical id in template.yaml); a function's main serves its
// own part, so its binary links only the handlers it serves. Routes joins
// the parts for tests and tools (a test keeps them equal to the OpenAPI
// document, which another keeps equal to template.yaml).
package api
