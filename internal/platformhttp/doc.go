// Package platformhttp is the one HTTP/JSON plumbing shared by the clients of
// Excloud platform APIs (internal/compute, internal/dns), so that the two
// clients differ only in their vocabulary and their table of paths.
//
// In: a service name (for error text), a base URL, an *http.Client, and per
// call a context carrying the operator's token (internal/platformauth) and,
// if any, the id of the request being served (internal/requestid), sent as
// X-Request-Id.
// Out: JSON-decoded responses, or an error that is either an *APIError (the
// platform answered with a non-2xx status) or a wrapped transport error (the
// platform was not reached or its answer could not be read). IsNotFound tells
// a 404 apart, which the clients use for idempotent deletes.
//
// Error bodies are read as the platform's error convention
// {"error": {"code": "...", "message": "..."}}; anything else becomes the
// message, truncated.
package platformhttp
