// Package apitypes is the one definition of the API's shapes, imported by
// the server's use cases (which fill them from rows), the CLI and the
// tests, so they cannot drift. It holds plain types only and imports no
// package of the project's: the CLI links it and none of the server's.
//
// Each type is named as its schema in internal/apidocs/openapi.json, the
// contract; internal/api's tests hold every type's fields to its schema's
// properties. Values the server types more tightly (a phase, a state, a
// CA's name) are plain strings here: the use case converts.
//
// The shapes only nodes read (bundles, renewals, snapshot uploads) stay
// with the use cases that serve them: no Go client decodes them.
package apitypes
