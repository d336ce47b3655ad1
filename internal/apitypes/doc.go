// Package apitypes is the one definition of the API's shapes, imported by
// the server's use cases (which fill them from rows), the CLI and the
// tests, so they cannot drift. It holds plain types only and imports no
// package of the server's: the CLI links none of them.
// (internal/apidocs/openapi.json is the contract they are held to.)
package apitypes
