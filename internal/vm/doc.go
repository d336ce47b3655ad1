// Package vm makes and deletes the VMs of every role for the operations
// that need them (a founding, a node pool's create and scale, a
// control-plane node's replacement): one Create for any role, the creates
// of a set marked requested and recorded in one statement each, the
// addresses polled until the platform attaches them, and a Delete that
// finds a VM whose create answer was lost by repeating the create under
// the same idempotency token (Token: an HMAC under the cluster's key).
//
// In: cluster and node rows, a lease's fence. Out: VM ids and addresses
// recorded in the rows; errors as the API answers them.
package vm
