// Package metrics counts what one request costs in round trips: database
// queries (a pgx QueryTracer) and KMS calls (a KMS middleware), into a
// request-scoped Counters carried by the context.
//
// In: a context from Middleware (or WithCounters). Out: the counts, as
// structured log fields (LogAttrs) on the access-log line and, only when
// debug headers are enabled (K8SAPI_DEBUG_COUNTERS=1, the local stack sets
// it), as the response headers X-Debug-DB-Round-Trips and X-Debug-KMS-Calls,
// with X-Debug-Environment naming the process that answered.
// The benchmark's load driver (cmd/k8sapi-bench) reads the headers.
//
// What is counted: every query, exec and transaction statement pgx sends
// (BEGIN and COMMIT are statements too), each pgx.Batch once (its
// statements travel together and are answered together: one round trip),
// and every KMS GenerateDataKey and Decrypt; and the rows the INSERT,
// UPDATE and DELETE statements wrote (db_rows_written, on the log line
// only: the benchmark's cost table prices them). Not counted: the pool's liveness ping on a connection idle for
// over a second, and connection set-up.
package metrics

import (
	"context"
	"crypto/rand"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/excloud/k8sapi/internal/envelope"
)

// Response headers carrying the counts when debug headers are enabled.
// HeaderEnvironment names the process (one execution environment) that
// answered: a data-key cache is per environment, so whoever counts KMS
// calls per warm fetch must know which environment was warm.
const (
	HeaderDBRoundTrips = "X-Debug-DB-Round-Trips"
	HeaderKMSCalls     = "X-Debug-KMS-Calls"
	HeaderEnvironment  = "X-Debug-Environment"
)

// environment is this process's random name, made on first use.
var environment = sync.OnceValue(rand.Text)

// Counters are one request's counts; safe for concurrent use.
type Counters struct {
	db, kms, rows atomic.Int64
}

// DBRoundTrips reports the database statements sent so far.
func (c *Counters) DBRoundTrips() int64 { return c.db.Load() }

// RowsWritten reports the rows the statements so far inserted, updated or
// deleted (their command tags): what a request adds to the database's
// write I/O, which the benchmark's cost table counts.
func (c *Counters) RowsWritten() int64 { return c.rows.Load() }

// KMSCalls reports the KMS requests made so far.
func (c *Counters) KMSCalls() int64 { return c.kms.Load() }

type ctxKey struct{}

// WithCounters returns ctx carrying fresh Counters.
func WithCounters(ctx context.Context) (context.Context, *Counters) {
	c := &Counters{}
	return context.WithValue(ctx, ctxKey{}, c), c
}

// From returns the request's Counters, or nil outside a counted request.
func From(ctx context.Context) *Counters {
	c, _ := ctx.Value(ctxKey{}).(*Counters)
	return c
}

// LogAttrs are the counts as access-log fields; none outside a counted request.
func LogAttrs(ctx context.Context) []any {
	c := From(ctx)
	if c == nil {
		return nil
	}
	return []any{"db_round_trips", c.DBRoundTrips(), "kms_calls", c.KMSCalls(), "db_rows_written", c.RowsWritten()}
}

// QueryTracer counts each statement into the context's Counters.
type QueryTracer struct{}

var (
	_ pgx.QueryTracer = QueryTracer{}
	_ pgx.BatchTracer = QueryTracer{}
)

// TraceQueryStart counts one round trip.
func (QueryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return roundTrip(ctx)
}

// roundTrip counts one round trip into ctx's Counters.
func roundTrip(ctx context.Context) context.Context {
	if c := From(ctx); c != nil {
		c.db.Add(1)
	}
	return ctx
}

// TraceQueryEnd counts the rows the statement wrote.
func (QueryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	countRows(ctx, d.CommandTag)
}

// countRows adds the rows an INSERT, UPDATE or DELETE wrote (a SELECT's
// rows are read, not written) to ctx's Counters.
func countRows(ctx context.Context, tag pgconn.CommandTag) {
	if c := From(ctx); c != nil && (tag.Insert() || tag.Update() || tag.Delete()) {
		c.rows.Add(tag.RowsAffected())
	}
}

// TraceBatchStart counts a whole batch as one round trip: pgx sends its
// statements in one pipeline with one Sync, and reads every answer after.
func (QueryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return roundTrip(ctx)
}

// TraceBatchQuery counts the rows each of the batch's statements wrote;
// its round trip was counted when the batch started.
func (QueryTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	countRows(ctx, d.CommandTag)
}

// TraceBatchEnd does nothing.
func (QueryTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// KMS is the part of the KMS API the envelope calls.
type KMS = envelope.KMS

// CountKMS wraps a KMS client so each call counts into the context's Counters.
func CountKMS(next KMS) KMS { return countingKMS{next} }

type countingKMS struct{ next KMS }

func (k countingKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	count(ctx)
	return k.next.GenerateDataKey(ctx, in, opts...)
}

func (k countingKMS) Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	count(ctx)
	return k.next.Decrypt(ctx, in, opts...)
}

func count(ctx context.Context) {
	if c := From(ctx); c != nil {
		c.kms.Add(1)
	}
}

// Begin starts counting one request: ctx carries fresh Counters and, with
// debugHeaders, the returned writer sends the counts as response headers,
// set when the handler writes its status (after its queries and KMS calls).
func Begin(ctx context.Context, w http.ResponseWriter, debugHeaders bool) (context.Context, http.ResponseWriter) {
	ctx, c := WithCounters(ctx)
	if debugHeaders {
		w = &headerWriter{ResponseWriter: w, c: c}
	}
	return ctx, w
}

// Middleware is Begin as an http.Handler wrapper.
func Middleware(next http.Handler, debugHeaders bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, w := Begin(r.Context(), w, debugHeaders)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type headerWriter struct {
	http.ResponseWriter
	c           *Counters
	wroteHeader bool
}

func (w *headerWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		h := w.Header()
		h.Set(HeaderDBRoundTrips, strconv.FormatInt(w.c.DBRoundTrips(), 10))
		h.Set(HeaderKMSCalls, strconv.FormatInt(w.c.KMSCalls(), 10))
		h.Set(HeaderEnvironment, environment())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
