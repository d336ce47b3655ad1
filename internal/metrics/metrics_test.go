package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type fakeKMS struct{}

func (fakeKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return &kms.GenerateDataKeyOutput{}, nil
}

func (fakeKMS) Decrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return &kms.DecryptOutput{}, nil
}

// handler makes three statements and two KMS calls, then answers.
func handler(t *testing.T) http.Handler {
	k := CountKMS(fakeKMS{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		for range 3 {
			QueryTracer{}.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{})
		}
		if _, err := k.GenerateDataKey(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Decrypt(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := LogAttrs(ctx); len(got) != 6 || got[1] != int64(3) || got[3] != int64(2) || got[5] != int64(0) {
			t.Errorf("LogAttrs = %v, want db_round_trips 3, kms_calls 2, db_rows_written 0", got)
		}
		_, _ = w.Write([]byte("ok"))
	})
}

func TestHeadersOnlyWhenEnabled(t *testing.T) {
	for _, debug := range []bool{true, false} {
		rec := httptest.NewRecorder()
		Middleware(handler(t), debug).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		db, kmsCalls := rec.Header().Get(HeaderDBRoundTrips), rec.Header().Get(HeaderKMSCalls)
		if debug && (db != "3" || kmsCalls != "2") {
			t.Errorf("debug headers = %q, %q; want 3, 2", db, kmsCalls)
		}
		if !debug && (db != "" || kmsCalls != "") {
			t.Errorf("headers sent without debug: %q, %q", db, kmsCalls)
		}
	}
}

func TestOutsideARequestNothingCounts(t *testing.T) {
	ctx := context.Background()
	QueryTracer{}.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{})
	if _, err := CountKMS(fakeKMS{}).Decrypt(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if From(ctx) != nil || LogAttrs(ctx) != nil {
		t.Error("counters outside a counted request")
	}
}

// TestCountersAreRequestScoped: two requests in one process never see
// each other's counts (a warm container, or tests, may overlap them).
func TestCountersAreRequestScoped(t *testing.T) {
	a, ca := WithCounters(context.Background())
	b, cb := WithCounters(context.Background())
	QueryTracer{}.TraceQueryStart(a, nil, pgx.TraceQueryStartData{})
	QueryTracer{}.TraceQueryStart(a, nil, pgx.TraceQueryStartData{})
	QueryTracer{}.TraceQueryStart(b, nil, pgx.TraceQueryStartData{})
	if ca.DBRoundTrips() != 2 || cb.DBRoundTrips() != 1 {
		t.Errorf("got %d and %d, want 2 and 1", ca.DBRoundTrips(), cb.DBRoundTrips())
	}
}

// A batch is one round trip however many statements it carries: pgx calls
// TraceBatchStart once and TraceBatchQuery per statement.
func TestBatchCountsOnce(t *testing.T) {
	ctx, c := WithCounters(context.Background())
	ctx = QueryTracer{}.TraceBatchStart(ctx, nil, pgx.TraceBatchStartData{})
	for range 3 {
		QueryTracer{}.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{})
	}
	QueryTracer{}.TraceBatchEnd(ctx, nil, pgx.TraceBatchEndData{})
	if got := c.DBRoundTrips(); got != 1 {
		t.Errorf("a batch of three statements counted %d round trips, want 1", got)
	}
}

// TestEnvironmentNamesTheProcess: every answer of one process names the
// same environment (the benchmark tells a warm one by it), and only with
// debug headers.
func TestEnvironmentNamesTheProcess(t *testing.T) {
	var seen []string
	for _, debug := range []bool{true, true, false} {
		rec := httptest.NewRecorder()
		Middleware(handler(t), debug).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		seen = append(seen, rec.Header().Get(HeaderEnvironment))
	}
	if seen[0] == "" || seen[1] != seen[0] || seen[2] != "" {
		t.Errorf("environments = %q; want one name twice, then none without debug", seen)
	}
}

// Rows written are the INSERT, UPDATE and DELETE command tags' rows, alone
// or in a batch; a SELECT's rows are read, not written.
func TestRowsWrittenCountsWritesOnly(t *testing.T) {
	ctx, c := WithCounters(context.Background())
	QueryTracer{}.TraceQueryEnd(ctx, nil, pgx.TraceQueryEndData{CommandTag: pgconn.NewCommandTag("INSERT 0 2")})
	QueryTracer{}.TraceQueryEnd(ctx, nil, pgx.TraceQueryEndData{CommandTag: pgconn.NewCommandTag("SELECT 7")})
	QueryTracer{}.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{CommandTag: pgconn.NewCommandTag("UPDATE 3")})
	QueryTracer{}.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{CommandTag: pgconn.NewCommandTag("DELETE 1")})
	if got := c.RowsWritten(); got != 6 {
		t.Fatalf("RowsWritten = %d, want 6", got)
	}
}
