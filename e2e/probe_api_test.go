package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The API probe is what an operator's client sees of an operation on a
// live cluster (issue 40's "10 requests a second to the API server"):
// GET /api/v1/namespaces/default through the cluster's endpoint, its name
// resolved by the node network's resolver (the platform's records, as
// DNS re-points them), each request on a new connection to the next of
// the name's addresses in turn (a client behind DNS round robin), falling
// back to the others only when a connection cannot be made, as Go's and
// curl's dialers do. Its credential is a short-lived admin kubeconfig from
// k8sapi, fetched again every apiProbeRefresh: the exec entry of `k8sapi
// kubeconfig` does the same, so a rotation's distrust refuses the
// kubeconfigs issued before it, not the probe.

const (
	apiProbeEvery   = 100 * time.Millisecond // 10 requests a second
	apiProbeRefresh = 30 * time.Second
	apiProbeTimeout = 5 * time.Second
	apiProbePath    = "/api/v1/namespaces/default"
)

type apiProbe struct {
	st           stack
	clusterID    int64
	name         string // the control-plane DNS name
	dial         harness.DialFunc
	resolver     *net.Resolver
	stop, done   chan struct{}
	once         sync.Once
	client       *http.Client
	fetched      time.Time
	asked, turns int
	failed       []string
}

// startAPIProbe starts the probe against the proven cluster.
func (p *provenCluster) startAPIProbe(t *testing.T) *apiProbe {
	t.Helper()
	dial := harness.Dialer(p.network.Switch)
	pr := &apiProbe{st: p.st, clusterID: p.cl.ClusterID, name: p.cl.ControlPlaneDNSName, dial: dial,
		resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial(ctx, network, net.JoinHostPort(harness.ResolverAddr.String(), strconv.Itoa(dnsPort)))
		}},
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := pr.refresh(); err != nil {
		fatalf(t, "the API probe's first credential: %v", err)
	}
	if err := pr.ask(); err != nil {
		fatalf(t, "the API probe before the operation: %v", err)
	}
	go pr.run()
	return pr
}

func (pr *apiProbe) run() {
	defer close(pr.done)
	tick := time.NewTicker(apiProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-pr.stop:
			return
		case <-tick.C:
		}
		pr.tick()
	}
}

// tick makes one request, the credential fetched again first when due
// (a failed fetch is not a failed request: the API server was not asked).
func (pr *apiProbe) tick() {
	if time.Since(pr.fetched) >= apiProbeRefresh {
		if err := pr.refresh(); err != nil {
			pr.fetched = time.Now() // try again at the next refresh, not every tick
		}
	}
	pr.asked++
	if err := pr.ask(); err != nil {
		pr.failed = append(pr.failed, fmt.Sprintf("API %d at %s: %v", pr.asked, time.Now().Format("15:04:05.000"), err))
	}
}

// finish stops the probe and says how many requests it made and which
// failed.
func (pr *apiProbe) finish() (int, []string) {
	pr.once.Do(func() { close(pr.stop) })
	<-pr.done
	return pr.asked, pr.failed
}

// refresh fetches a new admin kubeconfig (10 minutes) and builds the
// probe's client from it: its CA data and client certificate, no
// connection kept between requests.
func (pr *apiProbe) refresh() error {
	kubeconfig, err := pr.issueKubeconfig()
	if err != nil {
		return err
	}
	cfg, err := harness.KubeConfig(kubeconfig, "", pr.dial, nil)
	if err != nil {
		return err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	pr.client = &http.Client{Timeout: apiProbeTimeout, Transport: &http.Transport{
		TLSClientConfig: tlsCfg, DialContext: pr.dialNext, DisableKeepAlives: true, ForceAttemptHTTP2: false,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	pr.fetched = time.Now()
	return nil
}

// issueKubeconfig is POST /clusters/{id}/kubeconfig with the operator's
// token, without the test's fatal helpers (it runs in the probe's
// goroutine).
func (pr *apiProbe) issueKubeconfig() ([]byte, error) {
	code, raw, err := apiAnswer(pr.st, http.MethodPost, fmt.Sprintf("/clusters/%d/kubeconfig", pr.clusterID), `{"ttl":"10m"}`)
	if err != nil {
		return nil, err
	}
	if code != http.StatusCreated {
		return nil, fmt.Errorf("POST kubeconfig: %d %s", code, raw)
	}
	var issued struct {
		Kubeconfig string `json:"kubeconfig"`
	}
	if err := json.Unmarshal(raw, &issued); err != nil {
		return nil, err
	}
	return []byte(issued.Kubeconfig), nil
}

// dialNext resolves the endpoint's name and connects to its addresses
// starting at the next one in turn.
func (pr *apiProbe) dialNext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := pr.resolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	pr.turns++
	var errs []string
	for i := range ips {
		ip := ips[(pr.turns+i)%len(ips)]
		conn, err := pr.dial(ctx, network, net.JoinHostPort(ip, port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("no address of %s answered: %s", host, strings.Join(errs, "; "))
}

// ask makes one request and wants 200.
func (pr *apiProbe) ask() error {
	resp, err := pr.client.Get("https://" + net.JoinHostPort(pr.name, "6443") + apiProbePath)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%d %s", resp.StatusCode, raw)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
