package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

// maxIdempotencyKeyLen bounds the Idempotency-Key header.
const maxIdempotencyKeyLen = 255

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	org, err := s.Auth.Operator(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	noteOperator(r, org)
	key, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req clusterspec.Request
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.Founder.Found(r.Context(), org, org.Bearer(), req, key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	audit.NoteFrom(r.Context()).Cluster(res.ClusterID)
	w.Header().Set("Cache-Control", "no-store") // the body holds an admin key
	w.Header().Set("Location", "/clusters/"+strconv.FormatInt(res.ClusterID, 10))
	if res.Accepted != nil {
		// The founding goes on without this request: poll Location; repeat
		// the request with this key for the kubeconfig once it is active.
		w.Header().Set("Idempotency-Key", res.Key)
		w.Header().Set("Retry-After", "10")
		writeJSON(w, http.StatusAccepted, res.Accepted)
		return
	}
	// A replay answers exactly as the first call did, marked as a replay.
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusCreated, res.FoundingResult)
}

// idempotencyKey is the request's Idempotency-Key header ("" when absent).
func idempotencyKey(r *http.Request) (string, error) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(key) > maxIdempotencyKeyLen {
		return "", apperr.InvalidHeader.Detail("Idempotency-Key: must be at most 255 characters")
	}
	return key, nil
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) {
	org, err := s.Auth.Operator(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.Clusters.List(r.Context(), org, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// Page sizes of GET /clusters: a page small enough to answer quickly (each
// cluster brings its nodes), large enough that most orgs need one.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// listQuery reads GET /clusters' query: status, cursor and limit.
func listQuery(r *http.Request) (cluster.ListQuery, error) {
	cursor, limit, err := pageQuery(r, DefaultListLimit, MaxListLimit)
	return cluster.ListQuery{Status: r.URL.Query().Get("status"), Cursor: cursor, Limit: limit}, err
}

// pageQuery reads a listing's page of the query: its cursor, and its limit
// (def unless given, from 1 to most).
func pageQuery(r *http.Request, def, most int) (cursor string, limit int, err error) {
	v := r.URL.Query()
	raw := v.Get("limit")
	if raw == "" {
		return v.Get("cursor"), def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > most {
		return "", def, apperr.InvalidQuery.Detailf("limit: must be an integer from 1 to %d", most)
	}
	return v.Get("cursor"), n, nil
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	c, err := s.Clusters.Get(r.Context(), org, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	c, err := s.Clusters.Delete(r.Context(), org, org.Bearer(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// keepClusterSpec serves PUT /clusters/{id}/spec: the cluster file kept
// as the cluster's (k8sapi apply), answered with the cluster.
func (s *Server) keepClusterSpec(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var f apitypes.ClusterFile
	err := decodeJSON(r, &f)
	var c apitypes.ClusterView
	if err == nil {
		c, err = s.Clusters.KeepSpec(r.Context(), org, id, f)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// catalog serves GET /catalog: the compute API's images, instance types
// and subnets, read with the operator's own token.
func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	org, err := s.Auth.Operator(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	noteOperator(r, org)
	c, err := s.Clusters.Catalog(r.Context(), org, org.Bearer())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// orgAndClusterID authenticates the caller and parses {id}; on failure it
// has already answered.
func (s *Server) orgAndClusterID(w http.ResponseWriter, r *http.Request) (auth.Principal, int64, bool) {
	org, err := s.Auth.Operator(r.Context(), r.Header.Get("Authorization"))
	if err == nil {
		noteOperator(r, org)
		var id int64
		if id, err = parseID("id", r.PathValue("id")); err == nil {
			return org, id, true
		}
	}
	s.writeError(w, r, err)
	return auth.Principal{}, 0, false
}

// ParseID parses a path id: a positive decimal integer that fits int64,
// nothing else (no sign, no spaces, no leading zeros beyond "0").
func ParseID(raw string) (int64, bool) {
	if raw == "" || len(raw) > 19 || raw[0] == '0' {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, false // fail closed: ParseInt answers MaxInt64 on overflow
	}
	return id, true
}

func parseID(field, raw string) (int64, error) {
	id, ok := ParseID(raw)
	if !ok {
		return 0, apperr.InvalidPath.Detail(field + ": must be a positive integer")
	}
	return id, nil
}
