package audit

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Outcome is how a request ended, from its status.
type Outcome string

// The outcomes: 2xx and 3xx succeeded, 4xx refused, 5xx failed.
const (
	Succeeded Outcome = "succeeded"
	Refused   Outcome = "refused"
	Failed    Outcome = "failed"
)

// OutcomeOf is the outcome a status means.
func OutcomeOf(status int) Outcome {
	switch {
	case status >= 500:
		return Failed
	case status >= 400:
		return Refused
	}
	return Succeeded
}

// Unauthenticated names the principal of a request no token proved.
const Unauthenticated = "anonymous"

// Event is one audit record, in the one JSON form the functions log it in
// (the "audit" attribute of a record whose message is "audit") and
// GET /clusters/{id}/events lists it.
type Event struct {
	At        time.Time `json:"at"`
	OrgID     int64     `json:"org_id"`     // 0: unauthenticated
	ClusterID int64     `json:"cluster_id"` // 0: none known (refused before one)
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Resource  string    `json:"resource"`
	Outcome   Outcome   `json:"outcome"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
	// Reason says why, for a decision k8sapi took by itself (a
	// remediation's, taken or refused); for a request, what it changed
	// when its action alone does not say (a settings change: each old
	// value and its new); "" otherwise.
	Reason string `json:"reason,omitempty"`
	_      noEqual
}

// Remediate is the action of a remediation's decision (the reconciler's,
// on a node unhealthy for longer than its cluster's unhealthy_after):
// succeeded when the node's replacement began, refused with its reason.
const Remediate = "node.remediate"

// SystemActions are the actions of the events k8sapi records by itself,
// not for a route: they are kept in the cluster's trail as the routes'
// marked Trail are.
var SystemActions = []string{Remediate}

// ReconcilerPrincipal names k8sapi's reconciler in the events it records.
const ReconcilerPrincipal = "k8sapi:reconciler"

// noEqual makes a struct incomparable, so the compiler generates no
// equality function for it: each function's binary is held to 12 MiB.
type noEqual [0]func()

// Note is what a handler learns about a request while serving it.
type Note struct {
	orgID     int64
	principal string
	clusterID int64
	action    string // "": the route's
	reason    string
	_         noEqual
}

type noteKey struct{}

// WithNote gives ctx a note for the handler to fill.
func WithNote(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey{}, n), n
}

// NoteFrom is ctx's note; nil (which every method takes) for a request
// that is not audited.
func NoteFrom(ctx context.Context) *Note {
	n, _ := ctx.Value(noteKey{}).(*Note)
	return n
}

// Principal records who the request proved to be.
func (n *Note) Principal(orgID int64, who string) {
	if n != nil {
		n.orgID, n.principal = orgID, who
	}
}

// Cluster records the cluster the request acted on (a founding learns its
// id only while it runs).
func (n *Note) Cluster(id int64) {
	if n != nil {
		n.clusterID = id
	}
}

// As records the request under action, one its route declares
// (api.Route.Variants), in place of the route's own: what the request did
// is then in the trail itself (an upgrade that overrode a gate).
func (n *Note) As(action string) {
	if n != nil {
		n.action = action
	}
}

// Reason records what the request changed, for the event's Reason.
func (n *Note) Reason(what string) {
	if n != nil {
		n.reason = what
	}
}

// Event is the record of the request: the route's action (or As's), the resource
// (the request's path, as Resource keeps it), the status answered.
func (n *Note) Event(action, path, requestID string, status int, at time.Time) Event {
	if n.action != "" {
		action = n.action
	}
	e := Event{At: at, OrgID: n.orgID, ClusterID: n.clusterID, Principal: n.principal, Action: action,
		Resource: Resource(path), Outcome: OutcomeOf(status), Status: status, RequestID: requestID, Reason: n.reason}
	if e.Principal == "" {
		e.Principal = Unauthenticated
	}
	return e
}

// VMPrincipal names a VM that proved itself (its bootstrap routes), in the
// form auth.Principal.Who names an operator.
func VMPrincipal(orgID, vmID int64) string {
	return "org:" + strconv.FormatInt(orgID, 10) + ":vm:" + strconv.FormatInt(vmID, 10)
}

// MaxResourceBytes bounds an event's resource (migration 014's CHECK).
const MaxResourceBytes = 300

// truncatedMark ends a resource cut to MaxResourceBytes.
const truncatedMark = "...(truncated)"

// Resource is how an event keeps the decoded request path: escaped as a
// URL path is (a NUL as %00, a byte that is not UTF-8 as %FF, so the trail
// can store a path PostgreSQL would refuse and it reads back unambiguous),
// and cut to MaxResourceBytes with a mark saying so: a refused request
// with an odd path is kept like any other, never dropped.
func Resource(path string) string {
	r := (&url.URL{Path: path}).EscapedPath()
	if len(r) <= MaxResourceBytes {
		return r
	}
	cut := MaxResourceBytes - len(truncatedMark)
	// An escape is three bytes: never keep half of one.
	if i := strings.LastIndexByte(r[cut-2:cut], '%'); i >= 0 {
		cut -= 2 - i
	}
	return r[:cut] + truncatedMark
}
