package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/vmstandin"
)

// StartSimulator serves the platform simulator on a free loopback port,
// its VMs booting as stand-ins configured by standIns unless its
// APIBaseURL is "" (StartSimulator sets its IMDS and its log).
func StartSimulator(pool *pgxpool.Pool, log *slog.Logger, standIns vmstandin.Config) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	url = "http://" + l.Addr().String()
	cfg := simulator.Config{DB: pool, Logger: log.With("component", "simulator")}
	closePlayer := func() {}
	if standIns.APIBaseURL != "" {
		standIns.IMDSBaseURL, standIns.Log = url+"/imds", log.With("component", "stand-in vm")
		player := vmstandin.New(standIns)
		cfg.Created = func(vm simulator.CreatedVM) { player.Boot(vm.ID, vmstandin.Role(vm.Role)) }
		closePlayer = player.Close
	}
	sim, err := simulator.New(cfg)
	if err != nil {
		_ = l.Close()
		closePlayer()
		return "", nil, err
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return url, func() {
		closePlayer() // first: no stand-in calls a simulator that is going
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
