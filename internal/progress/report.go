package progress

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/store"
)

// MaxMessageBytes bounds a report's message: enough for the failing step
// and the last lines of its output.
const MaxMessageBytes = 4096

// Report is the body of POST /bootstrap/control-plane/{vm_id}/status and
// of POST /bootstrap/worker/{vm_id}/status. Pointers tell an absent phase
// from an empty one.
type Report struct {
	Phase   *string `json:"phase"`
	Message *string `json:"message"`
}

// Validate returns the phase and message a node of role reported, or every
// problem at once as one 400.
func (r Report) Validate(role clusterfacts.Role) (clusterfacts.Phase, string, error) {
	var errs []string
	var p clusterfacts.Phase
	switch {
	case r.Phase == nil:
		errs = append(errs, "phase: is required")
	case !known(*r.Phase):
		errs = append(errs, "phase: must be one of "+reportableList(role))
	case !clusterfacts.ReportedByVM(clusterfacts.Phase(*r.Phase)):
		errs = append(errs, "phase: "+*r.Phase+" is recorded by k8sapi, not reported; must be one of "+reportableList(role))
	case !clusterfacts.PassedBy(clusterfacts.Phase(*r.Phase), role):
		errs = append(errs, "phase: "+*r.Phase+" is no phase a "+RoleNoun(role)+" passes; must be one of "+reportableList(role))
	default:
		p = clusterfacts.Phase(*r.Phase)
	}
	var msg string
	if r.Message != nil {
		msg = *r.Message
		if len(msg) > MaxMessageBytes {
			errs = append(errs, fmt.Sprintf("message: must be at most %d bytes", MaxMessageBytes))
		}
		if strings.ContainsRune(msg, 0) {
			// PostgreSQL text cannot hold NUL; say so instead of a 500.
			errs = append(errs, "message: must not contain NUL characters")
		}
	}
	if len(errs) > 0 {
		return "", "", apperr.InvalidRequest.Detail(strings.Join(errs, "; "))
	}
	return p, msg, nil
}

// known says whether s spells a bootstrap phase.
func known(s string) bool {
	_, err := clusterfacts.ParsePhase(s)
	return err == nil
}

// Recorder is the part of the store that records phases.
type Recorder interface {
	AdvancePhase(ctx context.Context, c store.PhaseChange) (store.PhaseOutcome, error)
}

var _ Recorder = (*store.Store)(nil)

// Service records the phases VMs report.
type Service struct {
	Store Recorder
}

// Report records the report of vm, a control-plane node, or says why it
// may not.
func (s *Service) Report(ctx context.Context, vm auth.BootstrapVM, r Report) error {
	return s.report(ctx, vm, clusterfacts.ControlPlane, r)
}

// ReportWorker records the report of vm, a pool's worker, or says why it
// may not.
func (s *Service) ReportWorker(ctx context.Context, vm auth.BootstrapVM, r Report) error {
	return s.report(ctx, vm, clusterfacts.Worker, r)
}

func (s *Service) report(ctx context.Context, vm auth.BootstrapVM, role clusterfacts.Role, r Report) error {
	to, msg, err := r.Validate(role)
	if err != nil {
		return err
	}
	return Advance(ctx, s.Store, vm, role, to, msg)
}

// Advance moves vm's node, of role, to phase to in one guarded UPDATE, the
// only way a phase changes (k8sapi's own bundle_fetched included, which a
// fetch sends with its other writes: FetchPhase).
func Advance(ctx context.Context, st Recorder, vm auth.BootstrapVM, role clusterfacts.Role, to clusterfacts.Phase, msg string) error {
	out, err := st.AdvancePhase(ctx, change(vm, role, to, msg))
	if err != nil {
		return advanceError(err, role)
	}
	return judge(out, to)
}

// change is the guarded move of vm's node, of role, to phase to.
func change(vm auth.BootstrapVM, role clusterfacts.Role, to clusterfacts.Phase, msg string) store.PhaseChange {
	return store.PhaseChange{
		VMID: vm.VMID, OrgID: vm.OrgID, Role: StoreRole(role), To: string(to), Message: msg, From: clusterfacts.EnterableFrom(to),
		FromOnceReady: enterableOnceReady(to), InitialOnly: clusterfacts.InitialOnly(to), MarksReady: to == clusterfacts.Ready,
	}
}

func advanceError(err error, role clusterfacts.Role) error {
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound.Detail("no " + RoleNoun(role) + " for this VM")
	}
	return apperr.DatabaseUnavailable.Wrap(err)
}

// StoreRole and RoleNoun are a role as the store and errors spell it
// (the health reports too: internal/nodehealth).
func StoreRole(role clusterfacts.Role) string {
	if role == clusterfacts.Worker {
		return store.RoleWorker
	}
	return store.RoleControlPlane
}

func RoleNoun(role clusterfacts.Role) string {
	if role == clusterfacts.Worker {
		return "worker"
	}
	return "control-plane node"
}

// judge answers a move to phase to that the store found as out.
func judge(out store.PhaseOutcome, to clusterfacts.Phase) error {
	switch {
	case out.ClusterStatus != store.StatusActive:
		return apperr.ClusterNotActive.Detail("the VM's cluster is " + out.ClusterStatus)
	case out.Moved:
		return nil
	}
	if clusterfacts.InitialOnly(to) && !out.Initial {
		return apperr.PhaseNotForThisNode.Detail(
			"only the cluster's initial node reports " + string(to))
	}
	return refusal(clusterfacts.Phase(out.Current), to)
}

// enterableOnceReady lists the phases, beyond clusterfacts.EnterableFrom's, that a node
// which has been ready in its current bootstrap may leave for to: a ready
// node whose renewal failed reports ready again once one succeeds. Its
// bootstrap stays closed throughout (Window: ready_at), whatever it reports.
func enterableOnceReady(to clusterfacts.Phase) []string {
	if to == clusterfacts.Ready {
		return []string{string(clusterfacts.Failed)}
	}
	return nil
}

// refusal says why a report did not move the node. A second failed keeps
// the first one's message: the first failure is the cause, later ones (the
// scripts that ran the failed step, the shim) only its echo.
func refusal(current, to clusterfacts.Phase) error {
	switch {
	case to == clusterfacts.Failed:
		return nil
	case current == clusterfacts.Failed:
		return apperr.BootstrapFailed.New()
	case current.After(to):
		return apperr.PhaseRegression.Detailf("the node is already %s; %s comes before it", current, to)
	}
	// The guard refused what the node's phase a moment ago allowed: another
	// report moved it in between. Saying so beats pretending it worked.
	return apperr.PhaseRegression.New()
}

// FetchPhase is the move to bundle_fetched that vm's successful bundle
// fetch records, current being the node's phase as the fetch loaded it:
// nil unless the node is pending. A VM that fetches again later (a reboot,
// a re-run) is further along. The fetch sends it with its other writes, in
// one round trip, and answers the outcome with FetchPhaseOutcome.
func FetchPhase(vm auth.BootstrapVM, role clusterfacts.Role, current clusterfacts.Phase) *store.PhaseChange {
	if current != clusterfacts.Pending {
		return nil
	}
	c := change(vm, role, clusterfacts.BundleFetched, "")
	return &c
}

// FetchPhaseOutcome judges the move FetchPhase asked for: a refused move (a
// report raced the fetch) is no error.
func FetchPhaseOutcome(out store.PhaseOutcome) error {
	err := judge(out, clusterfacts.BundleFetched)
	if e, ok := apperr.As(err); ok && e.Kind() == apperr.KindConflict {
		return nil
	}
	return err
}
