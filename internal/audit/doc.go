// Package audit is the one structured form of the audit trail: who
// (principal and org) did what (action) to which resource, and how it
// ended (outcome and status), with the request's id.
//
// In: the route's action (api.Routes names one for every state-changing
// route), what the handler learnt while serving (the authenticated
// principal, the cluster), and the status it answered. Out: one "audit"
// log record per such request, its "audit" attribute the Event as JSON, in
// the function's log group (retained when the stack goes), and, when the
// cluster is the caller's, one row of the cluster's trail (migration 014),
// listed by GET /clusters/{id}/events in the same JSON form.
//
// The row is written after the answer is decided, so a request whose row
// cannot be written is still answered; the log record is always written,
// and the failure to store the row is logged beside it.
package audit
