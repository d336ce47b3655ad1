package usecase

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/store"
)

// DatabaseError is a failure of the database as the API answers it.
func DatabaseError(err error) error { return apperr.DatabaseUnavailable.Wrap(err) }

// KMSError is a failure of KMS as the API answers it.
func KMSError(err error) error { return apperr.KMSUnavailable.Wrap(err) }

// ComputeError is a failure of the compute API while doing what, as the
// API answers it. What became of the operation is said by whoever knows
// it: TurnedBack or GoesOn.
func ComputeError(what string, err error) error {
	return apperr.ComputeFailed.Detailf("the compute API failed while %s", what).WithCause(err)
}

// TurnedBack is the answer of an operation a step's failure (cause) ended
// and whose undo is done or recorded: cause's own code, and what the undo
// did (what).
func TurnedBack(cause error, what string) error {
	e, ok := apperr.As(cause)
	if !ok {
		return cause
	}
	return e.Code.Detail(e.Message + "; " + what).WithCause(e.Err)
}

// GoesOn is the answer of an operation a step's failure (cause) stopped
// and that could not be turned back now: it is not over, the reconciler
// carries it on (what says how and what to do), so the answer is neither
// a success nor "nothing was kept".
func GoesOn(cause error, what string) error {
	return apperr.OperationContinues.Detail(Reason(cause) + "; " + what).WithCause(cause)
}

// Recorded maps a failure to record a side effect to its answer: a lost
// lease stops the driver, anything else is the database.
func Recorded(err error) error {
	if err == nil || errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	return DatabaseError(err)
}

// Reason is what GET shows of a failure: the operator-facing message of an
// *apperr.Error, or a generic sentence (causes go to the log, not the API).
func Reason(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code.String() + ": " + e.Message
	}
	return "internal error; see the logs"
}

// TrustError classifies a failure to open c's trust: KMS unreachable is
// 503; sealed keys that do not open (tampered, moved, missing) are a 500
// whose event is logged with the cluster (VM 0: the cluster's own keys),
// never the key.
func (d *Deps) TrustError(ctx context.Context, c *store.Cluster, err error) error {
	if !errors.Is(err, envelope.ErrOpen) {
		return KMSError(err)
	}
	d.Logger().ErrorContext(ctx, "sealed key material does not open", "cluster_id", c.ID, "vm_id", 0)
	return apperr.Internal.Wrap(err)
}

// errNoSuchCluster is the answer for a cluster org does not have (another
// org's is not found either).
var errNoSuchCluster = apperr.NotFound.Detail("no such cluster")

// OrgCluster reads one of org's clusters.
func (d *Deps) OrgCluster(ctx context.Context, org auth.Principal, id int64) (store.Cluster, error) {
	c, err := d.Store.Cluster(ctx, org.OrgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, errNoSuchCluster
	}
	if err != nil {
		return c, DatabaseError(err)
	}
	return c, nil
}

// NoSuchCluster is the answer for a store.ErrNotFound of a lookup scoped
// to an org's cluster; other errors are the database's.
func NoSuchCluster(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return errNoSuchCluster
	}
	return DatabaseError(err)
}

// ActiveCluster reads one of org's clusters that must be active for what
// (e.g. "its node pools and nodes change").
func (d *Deps) ActiveCluster(ctx context.Context, org auth.Principal, id int64, what string) (store.Cluster, error) {
	c, err := d.OrgCluster(ctx, org, id)
	if err == nil && c.Status != store.StatusActive {
		err = NotActive(c.Status, what)
	}
	return c, err
}

// NotActive answers an operation that needs an active cluster: the
// cluster is status, and what happens only while it is active.
func NotActive(status, what string) error {
	return apperr.ClusterNotActive.Detailf("the cluster is %s; %s only while it is active", status, what)
}
