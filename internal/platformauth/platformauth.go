// Package platformauth carries the caller's Excloud bearer token through a
// context to the platform clients (internal/compute, internal/dns).
//
// The platform APIs act on behalf of an org. A request of an operator is
// made with the operator's principal token, the same one that authenticated
// the call to k8sapi. The reconciler, which finishes or undoes operations
// whose function died, has no operator: it uses k8sapi's own service token
// and names the org it acts for (WithOrg), which the platform checks against
// the service principal's grants. Passing it in the
// context (rather than in every method's arguments or in the client at
// construction) keeps the client interfaces small and lets one client, built
// once per cold start, serve callers of many orgs.
//
// In: WithToken(ctx, token) by the use case that received the token.
// Out: Token(ctx) in the HTTP plumbing, which sets "Authorization: Bearer",
// and Org(ctx), which names the org for a service token.
package platformauth

import "context"

type tokenKey struct{}

// WithToken returns a context whose platform calls are made with token.
func WithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// Token returns the token set by WithToken; ok is false when there is none
// (or it is empty), so a client can refuse to call the platform anonymously.
func Token(ctx context.Context) (token string, ok bool) {
	token, _ = ctx.Value(tokenKey{}).(string)
	return token, token != ""
}

type orgKey struct{}

// WithOrg returns a context whose platform calls name org as the org they
// act for: the reconciler's calls under k8sapi's service token.
func WithOrg(ctx context.Context, org int64) context.Context {
	return context.WithValue(ctx, orgKey{}, org)
}

// Org returns the org set by WithOrg; ok is false when there is none.
func Org(ctx context.Context) (org int64, ok bool) {
	org, ok = ctx.Value(orgKey{}).(int64)
	return org, ok && org > 0
}
