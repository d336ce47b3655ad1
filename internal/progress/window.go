package progress

import (
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// DefaultWindow is how long a node's bootstrap stays open after founding or
// a re-open unless BOOTSTRAP_WINDOW says otherwise: a VM fetches its bundle
// within minutes of booting (the shim retries for 10), so an hour covers a
// slow boot and leaves a stolen IMDS session little to use.
const DefaultWindow = time.Hour

// Window is when a node's bundle may be fetched: from when its bootstrap
// opened (founding, or its last re-open) until it first reports ready, and
// for at most Length. Once ready, nothing the VM reports opens it again
// (a failed after ready is a report, not a right): only the operator's
// re-open does.
type Window struct {
	OpenedAt time.Time
	ReadyAt  *time.Time // the node's first ready since OpenedAt
	Length   time.Duration
}

// ClosesAt is when the window closes if the node is not ready before.
func (w Window) ClosesAt() time.Time { return w.OpenedAt.Add(w.Length) }

// Open reports whether a node in phase may fetch its bundle at now.
func (w Window) Open(phase clusterfacts.Phase, now time.Time) bool {
	return w.Refusal(phase, now) == nil
}

// Refusal says why a node in phase may not fetch its bundle at now (409
// bootstrap_closed), nil if it may. A ready node has what it needs; a
// window past its length is closed whatever the phase. Either way an
// operator re-opens it (POST /clusters/{id}/nodes/{vm_id}/rebootstrap).
func (w Window) Refusal(phase clusterfacts.Phase, now time.Time) error {
	switch {
	case phase == clusterfacts.Ready || w.ReadyAt != nil:
		return closed("the node reported ready")
	case !now.Before(w.ClosesAt()):
		return closed(fmt.Sprintf("its window closed at %s", w.ClosesAt().UTC().Format(time.RFC3339)))
	}
	return nil
}

func closed(why string) error {
	return apperr.BootstrapClosed.Detail(
		"the node's bootstrap is closed (" + why + "); an operator may re-open it with POST /clusters/{id}/nodes/{vm_id}/rebootstrap")
}
