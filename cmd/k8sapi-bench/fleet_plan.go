package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// statement is one statement as the store sent it, named by the store
// method that sent it.
type statement struct {
	caller string
	sql    string
	args   []any
}

// recorder is a pgx tracer that counts and keeps the statements the
// store sends while it is on: the benchmark's statements are the store's
// own, so their plans are explained as sent, not copied out of it.
type recorder struct {
	mu    sync.Mutex
	on    bool
	stmts []statement
}

func (r *recorder) start() { r.mu.Lock(); r.on, r.stmts = true, nil; r.mu.Unlock() }

// stop turns it off and returns what it kept.
func (r *recorder) stop() []statement {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.stmts
}

func (r *recorder) add(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on || isTxControl(sql) {
		return
	}
	r.stmts = append(r.stmts, statement{caller: storeCaller(), sql: sql, args: args})
}

// isTxControl: begin, commit and rollback are no statements to count.
func isTxControl(sql string) bool {
	switch strings.ToLower(strings.TrimSpace(sql)) {
	case "begin", "commit", "rollback":
		return true
	}
	return false
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL, d.Args)
	return ctx
}
func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL, d.Args)
}
func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

const storePkg = "github.com/excloud/k8sapi/internal/store."

// storeCaller is the outermost store function on the stack: the method
// the caller called (FinishFounding, not the fenced helper under it).
func storeCaller() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	name := "?"
	for {
		f, more := frames.Next()
		if rest, ok := strings.CutPrefix(f.Function, storePkg); ok {
			name = strings.TrimPrefix(strings.SplitN(rest, ".func", 2)[0], "(*Store).")
		}
		if !more {
			return name
		}
	}
}

// plan is one statement's EXPLAIN (ANALYZE, BUFFERS): its scans, the rows
// they read and the buffers the statement touched.
type plan struct {
	caller   string
	scans    []scan
	rowsRead float64
	buffers  int64
	execMS   float64
}

// scan is one scan node: what it read and how many rows it looked at.
type scan struct {
	node, relation, index string
	rows                  float64
}

func (s scan) String() string {
	what := s.relation
	if s.index != "" {
		what = s.index
	}
	return fmt.Sprintf("%s %s (%.0f rows)", s.node, what, s.rows)
}

// fleetWide reports whether the plan's cost grows with a fleet of n
// clusters: a sequential scan that reads a tenth of that many rows, or any
// scan that reads half as many (a page of 200 clusters reads 1,200 nodes
// by index, which is the page's size, not the fleet's).
func (p plan) fleetWide(n int) bool {
	return slices.ContainsFunc(p.scans, func(s scan) bool {
		return s.rows >= float64(n)/2 || s.node == "Seq Scan" && s.rows >= float64(n)/10
	})
}

// explain runs each statement once more under EXPLAIN (ANALYZE, BUFFERS)
// in a transaction it rolls back, so a claim or an insert it explains
// changes nothing. Statements sent more than once are explained once.
func explain(ctx context.Context, pool *pgxpool.Pool, stmts []statement) ([]plan, error) {
	var out []plan
	seen := map[string]bool{}
	for _, s := range stmts {
		if seen[s.caller+s.sql] {
			continue
		}
		seen[s.caller+s.sql] = true
		p, err := explainOne(ctx, pool, s)
		if err != nil {
			return nil, fmt.Errorf("explaining %s: %w", s.caller, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func explainOne(ctx context.Context, pool *pgxpool.Pool, s statement) (plan, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return plan{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // what it explained is undone
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+s.sql, s.args...).Scan(&raw); err != nil {
		return plan{}, err
	}
	var doc []struct {
		Plan          planNode `json:"Plan"`
		ExecutionTime float64  `json:"Execution Time"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		return plan{}, fmt.Errorf("reading the plan: %v", err)
	}
	p := plan{caller: s.caller, execMS: doc[0].ExecutionTime,
		buffers: doc[0].Plan.SharedHit + doc[0].Plan.SharedRead}
	doc[0].Plan.walk(func(n planNode) {
		if !strings.Contains(n.NodeType, "Scan") || n.RelationName == "" && n.IndexName == "" {
			return
		}
		rows := (n.ActualRows + n.RemovedByFilter + n.RemovedByRecheck) * n.ActualLoops
		p.scans = append(p.scans, scan{node: n.NodeType, relation: n.RelationName, index: n.IndexName, rows: rows})
		p.rowsRead += rows
	})
	return p, nil
}

// planNode is a node of EXPLAIN's JSON. Its row counts are per loop.
type planNode struct {
	NodeType         string     `json:"Node Type"`
	RelationName     string     `json:"Relation Name"`
	IndexName        string     `json:"Index Name"`
	ActualRows       float64    `json:"Actual Rows"`
	ActualLoops      float64    `json:"Actual Loops"`
	RemovedByFilter  float64    `json:"Rows Removed by Filter"`
	RemovedByRecheck float64    `json:"Rows Removed by Index Recheck"`
	SharedHit        int64      `json:"Shared Hit Blocks"`
	SharedRead       int64      `json:"Shared Read Blocks"`
	Plans            []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
