// Package requestid carries the id of the request being served in a
// context.Context. internal/lambdaserve puts the Lambda request id in;
// internal/api reads it for X-Request-Id and error bodies. It knows nothing
// of Lambda, so business code can depend on it.
package requestid

import "context"

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the id in ctx, or "" if none.
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}
