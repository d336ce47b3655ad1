package simulator

import (
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

	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/platformhttp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Header is set on every response: the simulator says what it is.
const Header = "X-Excloud-Simulator"

// IMDSTokenHeader carries the IMDS session token, as on the real platform.
const IMDSTokenHeader = "X-exc-imds-token"

const maxBody = 1 << 20 // userdata is the largest field; a shim is a few KiB

// Config is what the simulator needs.
type Config struct {
	DB     *pgxpool.Pool    // required: the dev platform tables live here
	Logger *slog.Logger     // nil: discard
	Now    func() time.Time // nil: time.Now; token expiry and VM timestamps
	// Created, when set, is told of every VM the compute API makes, once,
	// after its row commits (a replayed create makes none): the local
	// stack's stand-in VMs (internal/vmstandin) boot from it.
	Created func(vm CreatedVM)
}

// CreatedVM is what Config.Created is told of a new VM: its id and its
// "role" tag (k8sapi tags each VM control-plane or worker), which a
// stand-in boots as, as a real VM boots as the userdata rendered for its
// role says.
type CreatedVM struct {
	ID   int64
	Role string
}

// Simulator serves the simulated platform APIs. Its in-memory state
// (security groups, DNS records, faults) lives as long as the value.
type Simulator struct {
	db  *pgxpool.Pool
	log *slog.Logger
	now func() time.Time
	// created is Config.Created, never nil.
	created func(vm CreatedVM)

	mu      sync.Mutex // guards the fields below
	lastID  int64      // security group and rule ids
	groups  map[int64]*securityGroup
	records map[recordKey]dns.Record
	faults  Faults
	creates int // instance creates since faults were last set
	// tokens maps an org's idempotency token to the security group or rule
	// its first create made (VMs keep theirs in the vms table).
	tokens map[orgToken]int64
	reads  map[int64]int // GETs of each VM, for AddressAfterReads
}

type orgToken struct {
	org   int64
	token string
}

// New returns a simulator over cfg.DB.
func New(cfg Config) (*Simulator, error) {
	if cfg.DB == nil {
		return nil, errors.New("simulator: Config.DB is required")
	}
	s := &Simulator{
		db:      cfg.DB,
		log:     cfg.Logger,
		now:     cfg.Now,
		created: cfg.Created,
		groups:  map[int64]*securityGroup{},
		records: map[recordKey]dns.Record{},
		tokens:  map[orgToken]int64{},
		reads:   map[int64]int{},
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.created == nil {
		s.created = func(CreatedVM) {}
	}
	return s, nil
}

// Handler returns the simulator's HTTP handler (routes in the package doc).
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	c := func(method, path string, h func(http.ResponseWriter, *http.Request, int64)) {
		mux.HandleFunc(method+" /compute"+path, s.withComputeLatency(s.authenticated(h)))
	}
	c(http.MethodGet, compute.PathSubnets, s.listSubnets)
	c(http.MethodGet, compute.PathImages, s.listImages)
	c(http.MethodGet, compute.PathInstanceTypes, s.listInstanceTypes)
	c(http.MethodGet, compute.PathSubnet, s.getSubnet)
	c(http.MethodGet, compute.PathImage, s.getImage)
	c(http.MethodGet, compute.PathInstanceType, s.getInstanceType)
	c(http.MethodPost, compute.PathSecurityGroups, s.createSecurityGroup)
	c(http.MethodDelete, compute.PathSecurityGroup, s.deleteSecurityGroup)
	c(http.MethodPost, compute.PathSecurityGroupRules, s.createRule)
	c(http.MethodPost, compute.PathInstances, s.createInstance)
	c(http.MethodGet, compute.PathInstance, s.getInstance)
	c(http.MethodDelete, compute.PathInstance, s.deleteInstance)

	mux.HandleFunc("GET /dns"+dns.PathRecords, s.authenticated(s.listRecords))
	mux.HandleFunc("PUT /dns"+dns.PathRecord, s.authenticated(s.upsertRecord))
	mux.HandleFunc("DELETE /dns"+dns.PathRecord, s.authenticated(s.deleteRecord))

	mux.HandleFunc("GET /imds/{vm_id}/token", s.imdsToken)
	mux.HandleFunc("PUT /imds/{vm_id}/token", s.imdsToken)
	mux.HandleFunc("GET /imds/{vm_id}/latest/identity/node-identity", s.imdsNodeIdentity)
	mux.HandleFunc("GET /imds/{vm_id}/latest/identity/access-token", s.imdsAccessToken)

	mux.HandleFunc("GET /_sim/faults", s.getFaults)
	mux.HandleFunc("POST /_sim/faults", s.setFaults)
	mux.HandleFunc("DELETE /_sim/faults", s.resetFaults)
	mux.HandleFunc("GET /_sim/instances", s.listInstances)
	mux.HandleFunc("GET /_sim/dns", s.listAllRecords)

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no simulated route "+r.Method+" "+r.URL.Path)
	})
	return s.logged(mux)
}

// logged marks every response as the simulator's and logs it. Tokens are
// never logged: only method, path, status and the caller's request id.
func (s *Simulator) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(Header, "true")
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "simulator request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("took", time.Since(start)),
			slog.String("request_id", r.Header.Get(platformhttp.RequestIDHeader)))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// authenticated resolves the bearer token to its org as the token service
// does, answering 401 for anything but a live principal token.
func (s *Simulator) authenticated(h func(http.ResponseWriter, *http.Request, int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			unauthorized(w, "a bearer token is required")
			return
		}
		var orgID int64
		var scope string
		err := s.db.QueryRow(r.Context(),
			`SELECT org_id, scope FROM principal_tokens
			 WHERE hash = $1 AND scope IN ('principal', 'service') AND revoked_at IS NULL AND expires_at > $2`,
			HashToken(strings.TrimSpace(token)), s.now()).Scan(&orgID, &scope)
		if errors.Is(err, pgx.ErrNoRows) {
			unauthorized(w, "the bearer token is unknown, expired, revoked or not a principal token")
			return
		}
		if err != nil {
			s.internal(w, r, "looking up bearer token", err)
			return
		}
		if scope == ScopeService {
			if orgID, err = strconv.ParseInt(r.Header.Get(platformhttp.OrgHeader), 10, 64); err != nil || orgID <= 0 {
				writeError(w, http.StatusBadRequest, "invalid_header", "a service token must name the org it acts for in "+platformhttp.OrgHeader)
				return
			}
		}
		h(w, r, orgID)
	}
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="excloud-simulator"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", msg)
}

// internal logs err and answers 500 without its text (the simulator keeps
// the platform's manners: no SQL in answers).
func (s *Simulator) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	s.log.ErrorContext(r.Context(), "simulator: "+doing, slog.String("error", err.Error()))
	writeError(w, http.StatusInternalServerError, "internal", "simulator failed "+doing)
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client is gone if this fails
}

// writeError answers in the platform's error convention.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	writeJSON(w, status, map[string]body{"error": {Code: code, Message: msg}})
}

// decode reads a JSON body strictly: unknown fields are refused, as a real
// API that grew a field we misspell should not silently ignore it.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_body", fmt.Sprintf("request body: %v", err))
		return false
	}
	if d.More() {
		writeError(w, http.StatusBadRequest, "invalid_body", "request body: trailing data after the JSON value")
		return false
	}
	return true
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
