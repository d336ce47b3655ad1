package simulator

import (
	"fmt"
	"net/http"
	"net/netip"
	"sort"

	"github.com/excloud/k8sapi/internal/dns"
)

// recordKey identifies a record: the simulator holds only A records, one
// per name, so (zone, name) suffices.
type recordKey struct{ zone, name string }

func (s *Simulator) upsertRecord(w http.ResponseWriter, r *http.Request, _ int64) {
	if s.dnsShouldFail() {
		writeError(w, http.StatusInternalServerError, "injected_fault", "simulated DNS failure (fail_dns)")
		return
	}
	zone, typ, name := r.PathValue("zone"), r.PathValue("type"), r.PathValue("name")
	var rec dns.Record
	if !decode(w, r, &rec) {
		return
	}
	var problem string
	switch {
	case typ != dns.TypeA:
		problem = fmt.Sprintf("type: the simulator serves only A records, not %q", typ)
	case rec.ZoneName != zone || rec.Name != name || rec.Type != typ:
		problem = "zone_name, name and type must match the path"
	case rec.TTL <= 0:
		problem = "ttl: must be positive"
	}
	if a, err := netip.ParseAddr(rec.Value); problem == "" && (err != nil || !a.Is4()) {
		problem = fmt.Sprintf("value: %q is not an IPv4 address", rec.Value)
	}
	if problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_field", problem)
		return
	}
	s.mu.Lock()
	s.records[recordKey{zone, name}] = rec
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, rec)
}

func (s *Simulator) deleteRecord(w http.ResponseWriter, r *http.Request, _ int64) {
	if s.dnsShouldFail() {
		writeError(w, http.StatusInternalServerError, "injected_fault", "simulated DNS failure (fail_dns)")
		return
	}
	key := recordKey{r.PathValue("zone"), r.PathValue("name")}
	s.mu.Lock()
	_, found := s.records[key]
	delete(s.records, key)
	s.mu.Unlock()
	if !found || r.PathValue("type") != dns.TypeA {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no %s record %s in zone %s", r.PathValue("type"), key.name, key.zone))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Simulator) listRecords(w http.ResponseWriter, r *http.Request, _ int64) {
	writeJSON(w, http.StatusOK, dns.RecordList{Records: s.Records(r.PathValue("zone"))})
}

func (s *Simulator) listAllRecords(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, dns.RecordList{Records: s.Records("")})
}

// Records returns the records of zone ("" for every zone), sorted by zone
// then name, never nil.
func (s *Simulator) Records(zone string) []dns.Record {
	s.mu.Lock()
	list := []dns.Record{}
	for k, rec := range s.records {
		if zone == "" || k.zone == zone {
			list = append(list, rec)
		}
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool {
		if list[i].ZoneName != list[j].ZoneName {
			return list[i].ZoneName < list[j].ZoneName
		}
		return list[i].Name < list[j].Name
	})
	return list
}
