// Package requestid carries the request id (the Lambda request id in AWS, the
// gateway's id locally) through a context, so handlers and logs can quote it
// without importing Lambda packages.
package requestid

import "context"

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the request id in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}
