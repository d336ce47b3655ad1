package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/simulator"
)

// sample is one request as the client saw it, with the function's counts
// and the execution environment that answered (metrics.HeaderEnvironment).
// warm says that environment had already served the request's cluster: its
// data-key cache could hold the key (a new environment's cannot).
type sample struct {
	d            time.Duration
	db, kms      int
	haveCounters bool
	env          string
	warm         bool
}

// loadRow is one (route, concurrency) measurement.
type loadRow struct {
	what    string
	conc, n int
	errs    int
	elapsed time.Duration
	samples []sample
}

func (l *loadRow) pct(p float64) time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(l.samples))
	for i, s := range l.samples {
		ds[i] = s.d
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(p*float64(len(ds))+0.999999) - 1 // nearest rank
	return ds[max(0, min(i, len(ds)-1))]
}

func (l *loadRow) throughput() float64 { return float64(len(l.samples)) / l.elapsed.Seconds() }

// counts returns min, max and mean of one counter; ok false without headers.
func (l *loadRow) counts(kms bool) (lo, hi int, mean float64, ok bool) {
	lo = 1 << 30
	n := 0
	for _, s := range l.samples {
		if !s.haveCounters {
			continue
		}
		v := s.db
		if kms {
			v = s.kms
		}
		lo, hi, mean = min(lo, v), max(hi, v), mean+float64(v)
		n++
	}
	if n == 0 {
		return 0, 0, 0, false
	}
	return lo, hi, mean / float64(n), true
}

// client talks to the local gateway and simulator.
type client struct {
	st     stack
	http   *http.Client
	served served
}

func newClient(st stack) *client {
	return &client{st: st, http: &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, MaxConnsPerHost: 32}}}
}

func (c *client) do(method, url string, body []byte, hdr map[string]string) (*http.Response, []byte, sample, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, sample{}, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	t := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, sample{}, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := sample{d: time.Since(t)}
	if err != nil {
		return nil, nil, s, err
	}
	db, e1 := strconv.Atoi(resp.Header.Get(metrics.HeaderDBRoundTrips))
	k, e2 := strconv.Atoi(resp.Header.Get(metrics.HeaderKMSCalls))
	s.db, s.kms, s.haveCounters = db, k, e1 == nil && e2 == nil
	s.env = resp.Header.Get(metrics.HeaderEnvironment)
	return resp, b, s, nil
}

type founded struct {
	ClusterID int64   `json:"cluster_id"`
	VMIDs     []int64 `json:"control_plane_vm_ids"`
}

// found POSTs /clusters for nodes control-plane nodes.
func (c *client) found(subnet int64, nodes int, alg string) (founded, sample, error) {
	body := fmt.Sprintf(`{"control_plane_count":%d,"control_plane_image_id":1,"control_plane_instance_type":"c1.large","subnet_id":%d,"key_algorithm":%q}`, nodes, subnet, alg)
	resp, b, s, err := c.do("POST", c.st.get("API_URL")+"/clusters", []byte(body), map[string]string{
		"Authorization": "Bearer " + c.st.get("DEV_TOKEN"), "Content-Type": "application/json"})
	if err != nil {
		return founded{}, s, err
	}
	if resp.StatusCode != http.StatusCreated {
		return founded{}, s, fmt.Errorf("POST /clusters: %d %s", resp.StatusCode, trim(b))
	}
	var f founded
	return f, s, json.Unmarshal(b, &f)
}

func (c *client) deleteCluster(id int64) error {
	resp, b, _, err := c.do("DELETE", fmt.Sprintf("%s/clusters/%d", c.st.get("API_URL"), id), nil,
		map[string]string{"Authorization": "Bearer " + c.st.get("DEV_TOKEN")})
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE /clusters/%d: %d %s", id, resp.StatusCode, trim(b))
	}
	return nil
}

// vmCreds is what a VM proves itself with on its bootstrap routes: its
// IMDS session token and the access token its IMDS issues it (an
// operator's token is refused there: token_scope).
type vmCreds struct {
	vm, cluster  int64
	imds, access string
}

// credentials asks the simulator's IMDS for vm's session token and, with
// it, vm's access token, as the VM's shim does (templates/exk8s-progress.sh:
// imds_session, imds_identity); not part of any timing.
func (c *client) credentials(vm, cluster int64) (vmCreds, error) {
	base := fmt.Sprintf("%s/imds/%d", c.st.get("SIM_URL"), vm)
	b, err := c.imdsGet(base+"/token", nil)
	if err != nil {
		return vmCreds{}, err
	}
	v := vmCreds{vm: vm, cluster: cluster, imds: strings.TrimSpace(string(b))}
	if b, err = c.imdsGet(base+"/latest/identity/access-token", map[string]string{simulator.IMDSTokenHeader: v.imds}); err != nil {
		return vmCreds{}, err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.AccessToken == "" {
		return vmCreds{}, fmt.Errorf("no access token of vm %d in %s (%v)", vm, trim(b), err)
	}
	v.access = tok.AccessToken
	return v, nil
}

// imdsGet is one IMDS call that must answer 200.
func (c *client) imdsGet(url string, hdr map[string]string) ([]byte, error) {
	resp, b, _, err := c.do("GET", url, nil, hdr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, trim(b))
	}
	return b, nil
}

// served remembers which execution environments have answered a fetch of
// which cluster, to tell a warm fetch from a new environment's first.
type served struct {
	mu   sync.Mutex
	seen map[[2]string]bool // environment, cluster
}

// mark sets s.warm when s's environment answered for cluster before, and
// remembers that it now has. Without the header no fetch is warm.
func (w *served) mark(s *sample, cluster int64) {
	if s.env == "" {
		return
	}
	k := [2]string{s.env, strconv.FormatInt(cluster, 10)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[[2]string]bool{}
	}
	s.warm, w.seen[k] = w.seen[k], true
}

// fetch is v's bundle fetch, with the VM's own proofs.
func (c *client) fetch(v vmCreds) (sample, error) {
	s, err := c.fetchOnce(v)
	c.served.mark(&s, v.cluster)
	return s, err
}

func (c *client) fetchOnce(v vmCreds) (sample, error) {
	resp, b, s, err := c.do("GET", fmt.Sprintf("%s/bootstrap/control-plane/%d", c.st.get("API_URL"), v.vm), nil,
		map[string]string{simulator.IMDSTokenHeader: v.imds, "Authorization": "Bearer " + v.access})
	if err != nil {
		return s, err
	}
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET bundle of vm %d: %d %s", v.vm, resp.StatusCode, trim(b))
	}
	return s, nil
}

func trim(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return strings.TrimSpace(string(b))
}

// drive runs n calls of f with conc workers.
func drive(what string, n, conc int, f func(i int) (sample, error)) *loadRow {
	row := &loadRow{what: what, conc: conc, n: n}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s, err := f(i)
				mu.Lock()
				if err != nil {
					if row.errs == 0 {
						log.Printf("%s: %v", what, err)
					}
					row.errs++
				} else {
					row.samples = append(row.samples, s)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	row.elapsed = time.Since(start)
	return row
}

var levels = []int{1, 4, 8}

func runLoad(o options, st stack, r *report) error {
	c := newClient(st)
	if _, _, s, err := c.do("GET", st.get("API_URL")+"/health", nil, nil); err != nil || !s.haveCounters {
		r.notes = append(r.notes, "The running stack does not send the debug counters headers (start it with this tree's `make local`): DB and KMS counts are missing.")
	}
	loadFoundings(o, c, r)
	var clusters []int64
	defer func() { deleteClusters(c, clusters) }()
	return loadFetches(o, c, r, &clusters)
}

// loadFoundings drives POST /clusters (3 nodes) at each level; each
// level's clusters are deleted after it.
func loadFoundings(o options, c *client, r *report) {
	for _, conc := range levels {
		var mu sync.Mutex
		var ids []int64
		row := drive("POST /clusters (3 nodes, ECDSA)", o.founds, conc, func(int) (sample, error) {
			f, s, err := c.found(o.subnet, 3, "ecdsa-p256")
			if err == nil {
				mu.Lock()
				ids = append(ids, f.ClusterID)
				mu.Unlock()
			}
			return s, err
		})
		r.load = append(r.load, row)
		deleteClusters(c, ids)
	}
}

func deleteClusters(c *client, ids []int64) {
	for _, id := range ids {
		if err := c.deleteCluster(id); err != nil {
			log.Printf("cleanup: %v", err)
		}
	}
}

// loadFetches drives bundle fetches: two 3-node ECDSA clusters, every VM
// fetching in turn, then one RSA-2048 node for contrast. The clusters it
// founds are appended to clusters for the caller to delete.
func loadFetches(o options, c *client, r *report, clusters *[]int64) error {
	var vms []vmCreds
	for range 2 {
		f, err := foundFetchers(o, c, 3, "ecdsa-p256", clusters)
		if err != nil {
			return err
		}
		vms = append(vms, f...)
	}
	// The first fetch of each VM: the first of a cluster unwraps its data
	// key (cold cache), the others find it cached.
	r.firstFetch = drive("GET bundle, first fetch of each VM", len(vms), 1, func(i int) (sample, error) {
		return c.fetch(vms[i])
	})
	drive("warm-up", 20, 1, func(i int) (sample, error) { return c.fetch(vms[i%len(vms)]) })
	for _, conc := range levels {
		r.load = append(r.load, drive("GET bundle (warm, ECDSA)", o.fetches, conc, func(i int) (sample, error) {
			return c.fetch(vms[i%len(vms)])
		}))
	}
	rsa, err := foundFetchers(o, c, 1, "rsa-2048", clusters)
	if err != nil {
		return err
	}
	if _, err := c.fetch(rsa[0]); err != nil { // warm its data key
		return err
	}
	r.load = append(r.load, drive("GET bundle (warm, RSA-2048)", 10, 1, func(int) (sample, error) {
		return c.fetch(rsa[0])
	}))
	return nil
}

// foundFetchers founds one cluster of n nodes and gives each VM's
// credentials.
func foundFetchers(o options, c *client, n int, alg string, clusters *[]int64) ([]vmCreds, error) {
	f, _, err := c.found(o.subnet, n, alg)
	if err != nil {
		return nil, err
	}
	*clusters = append(*clusters, f.ClusterID)
	var vms []vmCreds
	for _, vm := range f.VMIDs {
		v, err := c.credentials(vm, f.ClusterID)
		if err != nil {
			return nil, err
		}
		vms = append(vms, v)
	}
	return vms, nil
}
