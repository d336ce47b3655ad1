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

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// DefaultDelay is the pause before each phase and between fetch attempts:
// long enough that an operator watching (k8sapi create cluster --wait
// polls every 2 s) sees the phases go by, short enough to wait for.
const DefaultDelay = time.Second

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

// Config is what the stand-ins need.
type Config struct {
	IMDSBaseURL string        // the simulator's IMDS; a VM's is IMDSBaseURL/<vm_id>
	APIBaseURL  string        // k8sapi, as its functions' BOOTSTRAP_BASE_URL
	Delay       time.Duration // 0: DefaultDelay
	Client      *http.Client  // nil: one with a 30 s timeout
	Log         *slog.Logger  // nil: discard
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

// Boot starts vmID's stand-in unless it already runs or ran. It returns at
// once: the simulator calls it while answering the create.
func (p *Player) Boot(vmID int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.booted[vmID] || p.ctx.Err() != nil {
		return
	}
	p.booted[vmID] = true
	p.wg.Go(func() { p.run(vmID) })
}

// Close stops every stand-in and waits for them.
func (p *Player) Close() {
	p.mu.Lock()
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
}

// run is one VM's boot, logged as it ends.
func (p *Player) run(vmID int64) {
	log := p.cfg.Log.With("vm_id", vmID)
	err := p.boot(vmID, log)
	switch {
	case errors.Is(err, errGone), p.ctx.Err() != nil:
		log.Info("stand-in vm stopped: deleted or the stack stopping")
	case err != nil:
		log.Warn("stand-in vm failed", slog.String("error", err.Error()))
	default:
		log.Info("stand-in vm reported ready")
	}
}

// boot fetches the bundle, then reports each phase the node passes.
func (p *Player) boot(vmID int64, log *slog.Logger) error {
	initial, err := p.fetchWithRetries(vmID, log)
	if err != nil {
		if !errors.Is(err, errGone) && p.ctx.Err() == nil {
			p.report(vmID, clusterfacts.Failed, "stand-in vm: cannot fetch the bootstrap bundle: "+err.Error(), log)
		}
		return err
	}
	for _, phase := range Phases(initial) {
		if err := p.pause(); err != nil {
			return err
		}
		if err := p.report(vmID, phase, message, log); err != nil {
			return err
		}
	}
	return nil
}

// Phases are the phases a node reports after its fetch, in order: every
// phase a VM reports but failed, the initial node's own only if initial.
func Phases(initial bool) []clusterfacts.Phase {
	var out []clusterfacts.Phase
	for _, ph := range clusterfacts.Reportable() {
		if ph != clusterfacts.Failed && (initial || !clusterfacts.InitialOnly(ph)) {
			out = append(out, ph)
		}
	}
	return out
}

// pause waits Delay unless the player closes first.
func (p *Player) pause() error {
	t := time.NewTimer(p.cfg.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// fetchWithRetries fetches vmID's bundle, Delay apart until it answers,
// the VM is gone or attempts run out; it returns whether the node is the
// cluster's initial one.
func (p *Player) fetchWithRetries(vmID int64, log *slog.Logger) (initial bool, err error) {
	for i := 1; ; i++ {
		initial, err = p.fetch(vmID)
		if err == nil || errors.Is(err, errGone) || i == fetchAttempts {
			return initial, err
		}
		log.Debug("stand-in vm: bundle fetch failed; trying again", slog.Int("attempt", i), slog.String("error", err.Error()))
		if err := p.pause(); err != nil {
			return false, err
		}
	}
}

// fetch is one GET of the bundle with fresh proofs.
func (p *Player) fetch(vmID int64) (initial bool, err error) {
	pr, err := p.proofs(vmID)
	if err != nil {
		return false, err
	}
	var b struct {
		Initial bool `json:"is_initial_control_plane"`
	}
	err = p.call(http.MethodGet, p.apiURL(bundle.PathTemplate, vmID), nil, pr.headers(), &b)
	return b.Initial, err
}

// report posts phase for vmID with fresh proofs. Only the VM's being gone
// (or the player closing) is an error: like the scripts' reports, a failed
// one is logged and the bootstrap goes on.
func (p *Player) report(vmID int64, phase clusterfacts.Phase, msg string, log *slog.Logger) error {
	pr, err := p.proofs(vmID)
	if err == nil {
		body, _ := json.Marshal(map[string]string{"phase": string(phase), "message": msg})
		h := pr.headers()
		h.Set("Content-Type", "application/json")
		err = p.call(http.MethodPost, p.apiURL(bundle.StatusPathTemplate, vmID), body, h, nil)
	}
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
	if st := (*statusError)(nil); errors.As(err, &st) && st.status == http.StatusNotFound {
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

// call makes one request and reads a 2xx answer into out: a *bytes.Buffer
// takes it as it came, anything else as JSON (nil: discarded).
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
