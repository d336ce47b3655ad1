package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// DialFunc makes a connection (see Dialer).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// MutualTLS loads a client TLS config: the CA that must have signed the
// server, and the client's own cert and key (PEM files).
func MutualTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading client cert %s: %w", certFile, err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// EtcdClient connects to etcd over mutual TLS through dial.
func EtcdClient(endpoints []string, tlsCfg *tls.Config, dial DialFunc) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsCfg,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		})},
	})
}

// EtcdHealth checks that the cluster has exactly want started voting
// members, that each answers Status on its own client URL with the same
// cluster and leader, and that a linearizable read succeeds. It returns a
// one-line summary.
func EtcdHealth(ctx context.Context, cli *clientv3.Client, want int) (string, error) {
	ml, err := cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("member list: %w", err)
	}
	if len(ml.Members) != want {
		return "", fmt.Errorf("member list has %d members, want %d", len(ml.Members), want)
	}
	var names []string
	leaders := map[uint64]bool{}
	for _, m := range ml.Members {
		if m.Name == "" || len(m.ClientURLs) == 0 {
			return "", fmt.Errorf("member %x has not started", m.ID)
		}
		if m.IsLearner {
			return "", fmt.Errorf("member %s is a learner", m.Name)
		}
		st, err := cli.Status(ctx, m.ClientURLs[0])
		if err != nil {
			return "", fmt.Errorf("status of member %s at %s: %w", m.Name, m.ClientURLs[0], err)
		}
		if len(st.Errors) > 0 {
			return "", fmt.Errorf("member %s reports errors: %v", m.Name, st.Errors)
		}
		if st.Leader == 0 {
			return "", fmt.Errorf("member %s has no leader", m.Name)
		}
		leaders[st.Leader] = true
		names = append(names, m.Name)
	}
	if len(leaders) != 1 {
		return "", fmt.Errorf("members disagree on the leader: %v", leaders)
	}
	if _, err := cli.Get(ctx, "e2e-health"); err != nil {
		return "", fmt.Errorf("linearizable read: %w", err)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d healthy members: %s", len(names), strings.Join(names, ", ")), nil
}
