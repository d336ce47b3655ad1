package main

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// connPeak is the most database connections the storm's functions held
// open at once (pg_stat_activity, sampled), against the most their pools
// may open: each environment's pool (DB_MAX_CONNS) times the environments
// the gateway runs (lambdaruntime.MaxEnvironments), as the proxy's share
// of them would be in AWS.
type connPeak struct {
	peak, limit, samples int
	functions            []string
}

// stormRoutes are the routes the storm calls, as the template keys them.
var stormRoutes = []string{"GET " + bundle.PathTemplate, "POST " + bundle.StatusPathTemplate}

// stormPools are the functions that serve the storm's routes, their
// database logins and the connections their pools may open together.
func stormPools() (cp connPeak, logins []string, err error) {
	t, err := samtemplate.LoadTemplate("template.yaml")
	if err != nil {
		return cp, nil, err
	}
	for _, f := range t.Functions {
		if !slices.ContainsFunc(f.Routes, func(r samtemplate.Route) bool { return slices.Contains(stormRoutes, r.Key()) }) {
			continue
		}
		conns, err := strconv.Atoi(f.Env["DB_MAX_CONNS"])
		if err != nil {
			conns = 2 // the store's default pool
		}
		cp.limit += conns * lambdaruntime.MaxEnvironments
		cp.functions = append(cp.functions, f.LogicalID)
		logins = append(logins, dbroles.Login(dbroles.Functions[f.LogicalID]))
	}
	return cp, logins, nil
}

// watchConns samples the storm's functions' connections every 100 ms
// until the returned stop is called, which gives the peak.
func watchConns(st stack) (stop func() connPeak, err error) {
	cp, logins, err := stormPools()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, st.get("DATABASE_URL"))
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan connPeak)
	go func() {
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			var n int
			if conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND usename = ANY($1)`, logins).Scan(&n) == nil {
				cp.peak, cp.samples = max(cp.peak, n), cp.samples+1
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		done <- cp
	}()
	return func() connPeak { cancel(); return <-done }, nil
}
