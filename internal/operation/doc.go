// Package operation is the engine every durable operation of k8sapi runs
// on: a founding, a deletion's undo, a node pool's create, scale or delete,
// a control-plane node's replacement, a control-plane scaling, and the
// kinds to come (upgrades, CA rotation, remediation).
//
// A kind of operation is a Kind: its steps, how it lets go of its lease,
// and how it is undone. Every step is idempotent over the recorded state
// (it does only what is not recorded yet, and a remote create repeated
// after a lost answer carries the same idempotency token), so whoever holds
// the lease carries on from the rows alone. Drive runs the steps in order
// and ends every run in one of the Outcomes:
//
//	Done       every step ran; the last one recorded the end
//	Yielded    out of time between two side effects; released at once
//	Waiting    a step waits on the world (a node not ready yet); released
//	           until LookAgain has passed (a few seconds: a look is a few
//	           reads, and every look an upgrade or a replacement waits for
//	           adds to what the operator waits; the next reconciler run
//	           takes it)
//	LeaseLost  another driver holds the operation; nothing more is written
//	Undone     a step failed with a cause and the kind turned it back
//	Retrying   a step failed and the kind could not (or must not) turn it
//	           back now; it recorded why, a later driver tries again
//
// Undo runs on a context detached from the driver's (the request may be
// gone, an orphan VM costs the customer money), bounded by UndoTimeout.
//
// Every operation is one row of the table of operations (migration 025,
// internal/store's operations.go): kind, target, state, typed reason and
// message, lease, requested spec, times. The reconciler claims the oldest
// due row of any kind with one statement (store.ClaimDue) and hands it to
// its kind's handler; "no live operation on this cluster" is one check
// (store.BeginDeleting); Conditions makes the Ready and Progressing
// conditions the API shows of a cluster, a pool or a replacement from the
// resource's state and its latest operation.
//
// Adding a kind (an upgrade, a remediation):
//
//  1. its name and its target in store (a Kind* constant, a Target* one
//     if it acts on a new kind of resource, and the CHECK of
//     operations.target_type widened by a migration);
//  2. its begin statement inserts its row (kind, cluster, target, state
//     running, reason InProgress, the lease or none, its spec) in the
//     transaction that records its intent; its writes are fenced by the
//     store's opHeld (a live operation of the cluster held by the owner);
//     it ends with the store's endOperation (state, reason, message);
//  3. a Kind of steps, release and undo in its use-case package;
//  4. one row in reconciler.kinds: its name and its handler. Whether a
//     cluster's deletion may go ahead of it once its driver died is one
//     entry of store.DeletionTakesOver.
//
// The claim, the live-operation check and the conditions need no change.
//
// In: a Kind, the operation's state as loaded from the rows, a deadline.
// Out: a Result; the side effects are in the rows the steps wrote.
package operation
