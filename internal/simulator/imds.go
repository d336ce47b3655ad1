package simulator

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
)

// imdsToken issues a new session token for the VM named in the path. On
// the real platform only the VM itself can reach its IMDS; here anyone on
// loopback can, which is acceptable for a local simulator only.
func (s *Simulator) imdsToken(w http.ResponseWriter, r *http.Request) {
	vmID, ok := pathID(w, r, "vm_id")
	if !ok {
		return
	}
	tok, err := issueIMDSToken(r.Context(), s.db, vmID, s.now().Add(IMDSTokenTTL))
	if errors.Is(err, ErrNoSuchVM) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("vm %d not found", vmID))
		return
	}
	if err != nil {
		s.internal(w, r, "issuing imds token", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(tok))
}

// imdsSession checks the X-exc-imds-token header: a live session token of
// the path's VM, which must itself be live. It answers 401 and returns false
// otherwise; on success it returns the VM's id and org.
func (s *Simulator) imdsSession(w http.ResponseWriter, r *http.Request) (vmID, orgID int64, ok bool) {
	vmID, ok = pathID(w, r, "vm_id")
	if !ok {
		return 0, 0, false
	}
	tok := strings.TrimSpace(r.Header.Get(IMDSTokenHeader))
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "unauthorized", IMDSTokenHeader+" is required")
		return 0, 0, false
	}
	err := s.db.QueryRow(r.Context(),
		`SELECT t.org_id FROM imds_tokens t JOIN vms v ON v.id = t.vm_id
		 WHERE t.hash = $1 AND t.vm_id = $2 AND t.expiry_at > $3 AND v.deleted_at IS NULL`,
		HashToken(tok), vmID, s.now()).Scan(&orgID)
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "the imds token is unknown, expired or not this vm's")
		return 0, 0, false
	}
	if err != nil {
		s.internal(w, r, "checking imds token", err)
		return 0, 0, false
	}
	return vmID, orgID, true
}

func (s *Simulator) imdsNodeIdentity(w http.ResponseWriter, r *http.Request) {
	vmID, _, ok := s.imdsSession(w, r)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]int64{"node_id": vmID})
}

// imdsAccessToken issues a short-lived principal token of the VM's org,
// bound to the VM: the second factor the VM presents to k8sapi with its
// IMDS token, which opens that VM's bootstrap routes and nothing else.
func (s *Simulator) imdsAccessToken(w http.ResponseWriter, r *http.Request) {
	vmID, orgID, ok := s.imdsSession(w, r)
	if !ok {
		return
	}
	tok, err := issuePrincipalToken(r.Context(), s.db, vmGrant(orgID, vmID), s.now().Add(BootstrapTokenTTL))
	if err != nil {
		s.internal(w, r, "issuing access token", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"access_token": tok})
}
