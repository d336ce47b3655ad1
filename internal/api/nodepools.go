package api

import (
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/nodepool"
)

// createNodePool serves POST /clusters/{id}/node-pools: 201 with the pool
// once its workers' VMs exist, 202 when the reconciler finishes it, 200
// for an Idempotency-Key's replay.
func (s *Server) createNodePool(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	key, err := idempotencyKey(r)
	var req clusterspec.PoolRequest
	if err == nil {
		err = decodeJSON(r, &req)
	}
	var res nodepool.PoolResult
	if err == nil {
		res, err = s.Pools.CreatePool(r.Context(), org, org.Bearer(), id, req, key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", poolPath(id, res.Pool.Name))
	writePoolResult(w, res, http.StatusCreated)
}

// poolPath is where a pool is read.
func poolPath(clusterID int64, name string) string {
	return "/clusters/" + strconv.FormatInt(clusterID, 10) + "/node-pools/" + name
}

// writePoolResult answers a pool operation: done (status), going on after
// the answer (202: poll the pool), or an Idempotency-Key's replay (200).
func writePoolResult(w http.ResponseWriter, res nodepool.PoolResult, done int) {
	switch {
	case res.Accepted:
		w.Header().Set("Retry-After", "10")
		done = http.StatusAccepted
	case res.Replayed:
		w.Header().Set("Idempotent-Replayed", "true")
		done = http.StatusOK
	}
	writeJSON(w, done, res.Pool)
}

func (s *Server) listNodePools(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	pools, err := s.Pools.Pools(r.Context(), org, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitypes.NodePoolList{NodePools: pools})
}

func (s *Server) getNodePool(w http.ResponseWriter, r *http.Request) {
	org, id, name, ok := s.orgClusterAndPool(w, r)
	if !ok {
		return
	}
	p, err := s.Pools.Pool(r.Context(), org, id, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// scaleNodePool serves PATCH /clusters/{id}/node-pools/{pool}: a new count.
func (s *Server) scaleNodePool(w http.ResponseWriter, r *http.Request) {
	org, id, name, ok := s.orgClusterAndPool(w, r)
	if !ok {
		return
	}
	var req clusterspec.ScaleRequest
	err := decodeJSON(r, &req)
	var res nodepool.PoolResult
	if err == nil {
		res, err = s.Pools.ScalePool(r.Context(), org, org.Bearer(), id, name, req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePoolResult(w, res, http.StatusOK)
}

func (s *Server) deleteNodePool(w http.ResponseWriter, r *http.Request) {
	org, id, name, ok := s.orgClusterAndPool(w, r)
	if !ok {
		return
	}
	res, err := s.Pools.DeletePool(r.Context(), org, org.Bearer(), id, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePoolResult(w, res, http.StatusOK)
}

// orgClusterAndPool is orgAndClusterID with the path's {pool}; on failure
// it has already answered.
func (s *Server) orgClusterAndPool(w http.ResponseWriter, r *http.Request) (auth.Principal, int64, string, bool) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return org, id, "", false
	}
	name := r.PathValue("pool")
	if len(name) == 0 || len(name) > clusterspec.MaxPoolNameLen {
		s.writeError(w, r, apperr.InvalidPath.Detailf("pool: must be a node pool's name, at most %d characters", clusterspec.MaxPoolNameLen))
		return org, id, "", false
	}
	return org, id, name, true
}
