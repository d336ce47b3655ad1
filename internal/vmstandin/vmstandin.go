package vmstandin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// DefaultDelay is the pause before each phase and between fetch attempts:
// long enough that an operator watching (k8sapi create cluster --wait
// polls every 2 s) sees the phases go by, short enough to wait for.
const DefaultDelay = time.Second

// DefaultSnapshotEvery is how often a ready control-plane stand-in asks
// whether it is to take an etcd snapshot. A real node's timer asks every
// 5 minutes; a local operator who ran `etcd-snapshots create` should not
// wait that long, but the route's per-VM budget (40 asks an hour, fixed
// windows) must hold, so 36 an hour.
const DefaultSnapshotEvery = 100 * time.Second

// DefaultRenewEvery is how often a ready stand-in renews its
// certificates after its first renewal, which follows ready at once (so
// the renewal routes are used in every local journey): a real node's
// timer renews daily.
const DefaultRenewEvery = 24 * time.Hour

// fetchAttempts bounds the fetch's retries, Delay apart: the shim tries
// for minutes because a real k8sapi may not answer yet; locally, a minute
// is more than founding takes.
const fetchAttempts = 60

// message is every report's: whoever reads it must not mistake it for a
// machine's word.
const message = "reported by the local simulator's stand-in VM: nothing ran on a machine"

// imdsTokenHeader is the IMDS session token's header, as the shim sends it.
const imdsTokenHeader = "X-exc-imds-token"

// errGone is IMDS not knowing the VM any more: it was deleted.
var errGone = errors.New("the vm is gone")

// Role is what a VM boots as: its "role" tag, as k8sapi sets it (vm.Create)
// and renders its userdata for.
type Role string

// The roles a stand-in boots as.
const (
	ControlPlane Role = "control-plane"
	Worker       Role = "worker"
)

// phasesRole is the phase table's role of r.
func (r Role) phasesRole() clusterfacts.Role {
	if r == Worker {
		return clusterfacts.Worker
	}
	return clusterfacts.ControlPlane
}

// Config is what the stand-ins need.
type Config struct {
	IMDSBaseURL string        // the simulator's IMDS; a VM's is IMDSBaseURL/<vm_id>
	APIBaseURL  string        // k8sapi, as its functions' BOOTSTRAP_BASE_URL
	Delay       time.Duration // 0: DefaultDelay
	// SnapshotEvery is how often a ready control-plane stand-in asks for
	// an etcd snapshot to take (0: DefaultSnapshotEvery).
	SnapshotEvery time.Duration
	// RenewEvery is how often a ready stand-in renews its certificates
	// after the first renewal (0: DefaultRenewEvery).
	RenewEvery time.Duration
	Client     *http.Client // nil: one with a 30 s timeout
	Log        *slog.Logger // nil: discard
}

// Player boots a stand-in for each VM it is told of.
type Player struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	booted map[int64]bool // guarded by mu: each VM boots once
}

// New returns a player; Close stops its stand-ins.
func New(cfg Config) *Player {
	if cfg.Delay <= 0 {
		cfg.Delay = DefaultDelay
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.RenewEvery <= 0 {
		cfg.RenewEvery = DefaultRenewEvery
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.IMDSBaseURL = strings.TrimSuffix(cfg.IMDSBaseURL, "/")
	cfg.APIBaseURL = strings.TrimSuffix(cfg.APIBaseURL, "/")
	ctx, cancel := context.WithCancel(context.Background())
	return &Player{cfg: cfg, ctx: ctx, cancel: cancel, booted: map[int64]bool{}}
}

// Boot starts vmID's stand-in as role unless it already runs or ran. It
// returns at once: the simulator calls it while answering the create. A
// VM of no role k8sapi gives is not booted (nothing would serve it).
func (p *Player) Boot(vmID int64, role Role) {
	if role != ControlPlane && role != Worker {
		p.cfg.Log.Warn("stand-in vm: not booted, its role tag is neither control-plane nor worker", "vm_id", vmID, "role", string(role))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.booted[vmID] || p.ctx.Err() != nil {
		return
	}
	p.booted[vmID] = true
	p.wg.Go(func() { p.run(vmID, role) })
}

// Close stops every stand-in and waits for them.
func (p *Player) Close() {
	p.mu.Lock()
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
}

// run is one VM's life, logged as it ends.
func (p *Player) run(vmID int64, role Role) {
	log := p.cfg.Log.With("vm_id", vmID, "role", string(role))
	var err error
	if role == Worker {
		err = p.bootWorker(vmID, log)
	} else {
		err = p.bootControlPlane(vmID, log)
	}
	switch {
	case errors.Is(err, errGone), p.ctx.Err() != nil:
		log.Info("stand-in vm stopped: deleted or the stack stopping")
	case err != nil:
		log.Warn("stand-in vm failed", slog.String("error", err.Error()))
	default:
		log.Info("stand-in vm reported ready")
	}
}

// Phases are the phases a node of role reports after its fetch, in order:
// every phase such a VM reports but failed, the initial node's own only if
// initial.
func Phases(role Role, initial bool) []clusterfacts.Phase {
	var out []clusterfacts.Phase
	for _, ph := range clusterfacts.ReportableBy(role.phasesRole()) {
		if ph != clusterfacts.Failed && (initial || !clusterfacts.InitialOnly(ph)) {
			out = append(out, ph)
		}
	}
	return out
}

// reportPhases reports phases to statusPath in order, Delay apart.
func (p *Player) reportPhases(vmID int64, statusPath string, phases []clusterfacts.Phase, log *slog.Logger) error {
	for _, phase := range phases {
		if err := p.pause(p.cfg.Delay); err != nil {
			return err
		}
		if err := p.report(vmID, statusPath, phase, message, log); err != nil {
			return err
		}
	}
	return nil
}

// pause waits d unless the player closes first.
func (p *Player) pause(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// duty is what a ready stand-in does again and again, as one of its
// node's timers: after each of the waits of soon in turn, then every
// every. Only the VM's being gone or the player closing is an error of do.
type duty struct {
	soon  []time.Duration
	every time.Duration
	do    func() error
}

// wait is how long the duty waits before its n-th run (0 the first).
func (d duty) wait(n int) time.Duration {
	if n < len(d.soon) {
		return d.soon[n]
	}
	return d.every
}

// keepUp does each duty when it is due, until one of them ends (the VM
// gone, the player closing).
func (p *Player) keepUp(duties []duty) error {
	next := make([]time.Time, len(duties))
	runs := make([]int, len(duties))
	for i, d := range duties {
		next[i] = time.Now().Add(d.wait(0))
	}
	for {
		i := soonest(next)
		if err := p.pause(time.Until(next[i])); err != nil {
			return err
		}
		if err := duties[i].do(); err != nil {
			return err
		}
		runs[i]++
		next[i] = time.Now().Add(duties[i].wait(runs[i]))
	}
}

// soonest is the index of the earliest of times.
func soonest(times []time.Time) int {
	i := 0
	for j, t := range times {
		if t.Before(times[i]) {
			i = j
		}
	}
	return i
}

// renewal is the duty of renewing ids through r: at once, then every
// RenewEvery.
func (p *Player) renewal(vmID int64, r renewal, ids identities, log *slog.Logger) duty {
	return duty{soon: []time.Duration{0}, every: p.cfg.RenewEvery, do: func() error { return p.renew(vmID, r, ids, log) }}
}

// fetchWithRetries GETs vmID's bundle at path into out, Delay apart until
// it answers, the VM is gone or attempts run out; a fetch that never
// answers is reported failed to statusPath, as the shim reports it.
func (p *Player) fetchWithRetries(vmID int64, path, statusPath string, out any, log *slog.Logger) error {
	for i := 1; ; i++ {
		err := p.vmCall(vmID, http.MethodGet, path, nil, out)
		if err == nil || errors.Is(err, errGone) || p.ctx.Err() != nil {
			return err
		}
		if i == fetchAttempts {
			p.fail(vmID, statusPath, "cannot fetch the bootstrap bundle", err, log)
			return err
		}
		log.Debug("stand-in vm: bundle fetch failed; trying again", slog.Int("attempt", i), slog.String("error", err.Error()))
		if err := p.pause(p.cfg.Delay); err != nil {
			return err
		}
	}
}

// fail reports failed with the step and its error, unless the VM is gone
// or the player closing (nobody is left to read it).
func (p *Player) fail(vmID int64, statusPath, step string, err error, log *slog.Logger) {
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return
	}
	_ = p.report(vmID, statusPath, clusterfacts.Failed, "stand-in vm: "+step+": "+err.Error(), log)
}

// report posts phase for vmID to statusPath with fresh proofs. Only the
// VM's being gone (or the player closing) is an error: like the scripts'
// reports, a failed one is logged and the bootstrap goes on.
func (p *Player) report(vmID int64, statusPath string, phase clusterfacts.Phase, msg string, log *slog.Logger) error {
	body, _ := json.Marshal(map[string]string{"phase": string(phase), "message": msg})
	err := p.vmCall(vmID, http.MethodPost, statusPath, body, nil)
	if p.ctx.Err() != nil {
		return p.ctx.Err()
	}
	if errors.Is(err, errGone) {
		return err
	}
	if err != nil {
		log.Warn("stand-in vm: could not report "+string(phase)+"; going on", slog.String("error", err.Error()))
	}
	return nil
}

// vmCall calls k8sapi's VM route at path (a template with {vm_id}) as
// vmID, with proofs taken afresh as the VM's scripts take them; a body is
// sent as JSON.
func (p *Player) vmCall(vmID int64, method, path string, body []byte, out any) error {
	pr, err := p.proofs(vmID)
	if err != nil {
		return err
	}
	h := pr.headers()
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return p.call(method, p.apiURL(path, vmID), body, h, out)
}

// proofs are what a VM presents to k8sapi's VM routes.
type proofs struct{ imds, access string }

func (pr proofs) headers() http.Header {
	h := http.Header{}
	h.Set(imdsTokenHeader, pr.imds)
	h.Set("Authorization", "Bearer "+pr.access)
	return h
}

// proofs takes a session token from vmID's IMDS, then its access token.
// IMDS answering 404 for the token means the VM was deleted.
func (p *Player) proofs(vmID int64) (proofs, error) {
	base := p.cfg.IMDSBaseURL + "/" + strconv.FormatInt(vmID, 10)
	var session bytes.Buffer
	err := p.call(http.MethodGet, base+"/token", nil, nil, &session)
	if isStatus(err, http.StatusNotFound) {
		return proofs{}, errGone
	}
	if err != nil {
		return proofs{}, err
	}
	pr := proofs{imds: strings.TrimSpace(session.String())}
	var access struct {
		Token string `json:"access_token"`
	}
	h := http.Header{}
	h.Set(imdsTokenHeader, pr.imds)
	if err := p.call(http.MethodGet, base+"/latest/identity/access-token", nil, h, &access); err != nil {
		return proofs{}, err
	}
	pr.access = access.Token
	return pr, nil
}

// apiURL is k8sapi's route template for vmID.
func (p *Player) apiURL(template string, vmID int64) string {
	return p.cfg.APIBaseURL + strings.Replace(template, "{vm_id}", strconv.FormatInt(vmID, 10), 1)
}

// statusError is an answer other than 2xx, with the start of its body
// (it may end up in a failed report's message).
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, e.body)
}

// isStatus reports whether err is an answer of status.
func isStatus(err error, status int) bool {
	st := (*statusError)(nil)
	return errors.As(err, &st) && st.status == status
}

// call makes one request and reads a 2xx answer into out: a *bytes.Buffer
// takes it as it came, anything else JSON (nil: discarded). A 204 leaves
// out as it was.
func (p *Player) call(method, url string, body []byte, h http.Header, out any) error {
	req, err := http.NewRequestWithContext(p.ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if h != nil {
		req.Header = h
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 512)]))}
	}
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return decodeInto(b, out)
}

// maxAnswer bounds what is read of an answer: a bundle is a few hundred KiB.
const maxAnswer = 16 << 20

func decodeInto(b []byte, out any) error {
	switch o := out.(type) {
	case nil:
		return nil
	case *bytes.Buffer:
		_, err := o.Write(b)
		return err
	default:
		return json.Unmarshal(b, out)
	}
}
