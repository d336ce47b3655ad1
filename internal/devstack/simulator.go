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
// its VMs booting as stand-ins that reach k8sapi at apiURL unless it is "".
func StartSimulator(pool *pgxpool.Pool, log *slog.Logger, apiURL string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	url = "http://" + l.Addr().String()
	cfg := simulator.Config{DB: pool, Logger: log.With("component", "simulator")}
	closePlayer := func() {}
	if apiURL != "" {
		player := vmstandin.New(vmstandin.Config{IMDSBaseURL: url + "/imds", APIBaseURL: apiURL, Log: log.With("component", "stand-in vm")})
		cfg.Created, closePlayer = player.Boot, player.Close
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
