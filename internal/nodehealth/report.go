// Package nodehealth is a node's health: the report every ready node sends
// on a timer (POST /bootstrap/control-plane/{vm_id}/health and
// /bootstrap/worker/{vm_id}/health, the node's own proofs), the judgment
// of a node as healthy, unhealthy (since when, and why) or unknown, and
// the remediation decisions over a cluster's nodes (which unhealthy node
// to replace, and why any other is not). It decides and records; the
// reconciler carries a decision out through the replacement paths of
// internal/controlplane and internal/nodepool (docs/NODE-HEALTH.md).
package nodehealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/validation"
)

// The checks a node of each role reports, one table: every report names
// each of its role's checks, no other. A control-plane node's etcd check
// is its own member's health, apiserver its API server's /readyz.
var roleChecks = map[clusterfacts.Role][]string{
	clusterfacts.ControlPlane: {"kubelet", "etcd", "apiserver"},
	clusterfacts.Worker:       {"kubelet"},
}

// MaxCheckMessageBytes bounds a check's message: the first line or two of
// what the node saw.
const MaxCheckMessageBytes = 512

// Report is the body of a health report: each check of the node's role,
// whether it passed and what the node saw; on a control-plane node, the
// deprecated APIs its API server says were requested, when it could read
// them (absent: the record stands).
type Report struct {
	Checks         map[string]apitypes.HealthCheck `json:"checks"`
	DeprecatedAPIs []apitypes.DeprecatedAPI        `json:"deprecated_apis,omitempty"`
}

// Validate says every problem of a report of a node of role at once, as
// one 400.
func (r Report) Validate(role clusterfacts.Role) error {
	want := roleChecks[role]
	var errs []string
	if r.Checks == nil {
		errs = append(errs, "checks: is required, an object of "+strings.Join(want, ", "))
	}
	for _, name := range want {
		if _, ok := r.Checks[name]; r.Checks != nil && !ok {
			errs = append(errs, "checks."+name+": is required")
		}
	}
	for _, name := range sortedNames(r.Checks) {
		errs = append(errs, checkProblems(name, r.Checks[name], want)...)
	}
	for _, err := range validation.Errors(deprecatedAPIRules(role, r.DeprecatedAPIs)) {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return apperr.InvalidRequest.Detail(strings.Join(errs, "; "))
	}
	return nil
}

// checkProblems are what is wrong with one named check of a report.
func checkProblems(name string, c apitypes.HealthCheck, want []string) []string {
	var errs []string
	if !slices.Contains(want, name) {
		errs = append(errs, "checks."+name+": is no check of this node; its checks are "+strings.Join(want, ", "))
	}
	if len(c.Message) > MaxCheckMessageBytes {
		errs = append(errs, fmt.Sprintf("checks.%s.message: must be at most %d bytes", name, MaxCheckMessageBytes))
	}
	if strings.ContainsRune(c.Message, 0) {
		errs = append(errs, "checks."+name+".message: must not contain NUL characters")
	}
	return errs
}

func sortedNames(checks map[string]apitypes.HealthCheck) []string {
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// failing says whether any check of the report failed.
func (r Report) failing() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return true
		}
	}
	return false
}

// Recorder is the part of the store the reports need.
type Recorder interface {
	RecordHealth(ctx context.Context, r store.HealthReport) (store.HealthRecorded, error)
}

var _ Recorder = (*store.Store)(nil)

// Service records the reports VMs send.
type Service struct {
	Store Recorder
	Now   func() time.Time
}

// Answer is what a report's answer tells the node: renew now (a CA
// rotation asks it for a phase it has not applied), and, to a worker the
// running upgrade retires, that upgrade's drain bound in seconds (0: its
// bundle's own), and, to a control-plane node a pending etcd snapshot was
// handed to, to take it now.
type Answer struct {
	Renew        bool
	DrainSeconds int
	Snapshot     bool
}

// Report records the report of vm, a control-plane node.
func (s *Service) Report(ctx context.Context, vm auth.BootstrapVM, r Report) (Answer, error) {
	return s.record(ctx, vm, clusterfacts.ControlPlane, r)
}

// ReportWorker records the report of vm, a pool's worker.
func (s *Service) ReportWorker(ctx context.Context, vm auth.BootstrapVM, r Report) (Answer, error) {
	return s.record(ctx, vm, clusterfacts.Worker, r)
}

func (s *Service) record(ctx context.Context, vm auth.BootstrapVM, role clusterfacts.Role, r Report) (Answer, error) {
	if err := r.Validate(role); err != nil {
		return Answer{}, err
	}
	checks, _ := json.Marshal(r.Checks) // a map of plain structs cannot fail to marshal
	got, err := s.Store.RecordHealth(ctx, store.HealthReport{VMID: vm.VMID, OrgID: vm.OrgID, Role: progress.StoreRole(role),
		ChecksJSON: string(checks), Failing: r.failing(), At: s.now(), DeprecatedAPIs: r.storedAPIs()})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Answer{}, apperr.NotFound.Detail("no " + progress.RoleNoun(role) + " for this VM")
	case err != nil:
		return Answer{}, apperr.DatabaseUnavailable.Wrap(err)
	case got.Status != store.StatusActive:
		return Answer{}, apperr.ClusterNotActive.Detail("the VM's cluster is " + got.Status)
	}
	return Answer{Renew: got.RenewDue, DrainSeconds: got.DrainSeconds, Snapshot: got.SnapshotDue}, nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
