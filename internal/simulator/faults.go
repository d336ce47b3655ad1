package simulator

import (
	"net/http"
	"time"
)

// Faults are injected failures, for tests of k8sapi's compensation and
// soft-failure paths. The zero value injects nothing.
type Faults struct {
	// FailInstanceCreateOn makes the Nth instance create from the moment the
	// faults were set answer 500 (once); 0 disables.
	FailInstanceCreateOn int `json:"fail_instance_create_on"`
	// FailDNS makes every DNS upsert and delete answer 500.
	FailDNS bool `json:"fail_dns"`
	// ComputeLatencyMS delays every compute request.
	ComputeLatencyMS int `json:"compute_latency_ms"`
	// LoseInstanceCreateAnswerOn makes the Nth instance create from the
	// moment the faults were set succeed and then drop the connection
	// before answering (once); 0 disables. The caller never learns the id.
	LoseInstanceCreateAnswerOn int `json:"lose_instance_create_answer_on"`
	// AddressAfterReads makes every VM report no addresses to its first N
	// reads, as a platform that attaches interfaces after the create does.
	AddressAfterReads int `json:"address_after_reads"`
	// FailInstanceDelete makes every instance delete answer 500.
	FailInstanceDelete bool `json:"fail_instance_delete"`
}

// faultPatch is a POST /_sim/faults body: fields present change, fields
// absent keep their value, so a test can add one fault without knowing the
// others.
type faultPatch struct {
	FailInstanceCreateOn       *int  `json:"fail_instance_create_on"`
	FailDNS                    *bool `json:"fail_dns"`
	ComputeLatencyMS           *int  `json:"compute_latency_ms"`
	LoseInstanceCreateAnswerOn *int  `json:"lose_instance_create_answer_on"`
	AddressAfterReads          *int  `json:"address_after_reads"`
	FailInstanceDelete         *bool `json:"fail_instance_delete"`
}

// SetFaults applies f in place of the current faults (for in-process tests;
// over HTTP use POST /_sim/faults). It restarts the instance-create count.
func (s *Simulator) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.creates = f, 0
}

func (s *Simulator) getFaults(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, f)
}

func (s *Simulator) setFaults(w http.ResponseWriter, r *http.Request) {
	var p faultPatch
	if !decode(w, r, &p) {
		return
	}
	if negative(p.FailInstanceCreateOn, p.LoseInstanceCreateAnswerOn, p.AddressAfterReads) ||
		(p.ComputeLatencyMS != nil && (*p.ComputeLatencyMS < 0 || *p.ComputeLatencyMS > 60_000)) {
		writeError(w, http.StatusBadRequest, "invalid_fault",
			"fail_instance_create_on, lose_instance_create_answer_on and address_after_reads must be >= 0 and compute_latency_ms 0 to 60000")
		return
	}
	s.mu.Lock()
	if p.FailInstanceCreateOn != nil {
		s.faults.FailInstanceCreateOn = *p.FailInstanceCreateOn
		s.creates = 0 // "the Nth create from now"
	}
	if p.FailDNS != nil {
		s.faults.FailDNS = *p.FailDNS
	}
	if p.ComputeLatencyMS != nil {
		s.faults.ComputeLatencyMS = *p.ComputeLatencyMS
	}
	if p.LoseInstanceCreateAnswerOn != nil {
		s.faults.LoseInstanceCreateAnswerOn = *p.LoseInstanceCreateAnswerOn
		s.creates = 0
	}
	if p.AddressAfterReads != nil {
		s.faults.AddressAfterReads = *p.AddressAfterReads
	}
	if p.FailInstanceDelete != nil {
		s.faults.FailInstanceDelete = *p.FailInstanceDelete
	}
	f := s.faults
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, f)
}

func (s *Simulator) resetFaults(w http.ResponseWriter, r *http.Request) {
	s.SetFaults(Faults{})
	w.WriteHeader(http.StatusNoContent)
}

// instanceCreateShouldFail counts one instance create and reports whether
// it is the one set to fail. The fault fires once.
func (s *Simulator) instanceCreateShouldFail() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.FailInstanceCreateOn == 0 {
		return false
	}
	s.creates++
	if s.creates == s.faults.FailInstanceCreateOn {
		s.faults.FailInstanceCreateOn = 0
		return true
	}
	return false
}

// answerShouldBeLost reports whether this successful instance create is the
// one whose answer is to be lost. The fault fires once. It shares the create
// count with FailInstanceCreateOn, which counts first.
func (s *Simulator) answerShouldBeLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.LoseInstanceCreateAnswerOn == 0 {
		return false
	}
	if s.faults.FailInstanceCreateOn == 0 {
		s.creates++
	}
	if s.creates == s.faults.LoseInstanceCreateAnswerOn {
		s.faults.LoseInstanceCreateAnswerOn = 0
		return true
	}
	return false
}

// addressesPending counts one read of VM id and reports whether its
// addresses are still to be hidden (AddressAfterReads).
func (s *Simulator) addressesPending(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[id]++
	return s.reads[id] <= s.faults.AddressAfterReads
}

func (s *Simulator) instanceDeleteShouldFail() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.FailInstanceDelete
}

// dropConnection closes the connection without an answer: the create went
// through, and the caller sees a transport error.
func dropConnection() {
	panic(http.ErrAbortHandler) // net/http closes the connection, logging nothing
}

func negative(vs ...*int) bool {
	for _, v := range vs {
		if v != nil && *v < 0 {
			return true
		}
	}
	return false
}

func (s *Simulator) dnsShouldFail() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.FailDNS
}

// withComputeLatency delays a compute request by the injected latency,
// before authentication, like a slow network would.
func (s *Simulator) withComputeLatency(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		d := time.Duration(s.faults.ComputeLatencyMS) * time.Millisecond
		s.mu.Unlock()
		if err := sleep(r.Context(), d); err != nil {
			return // the caller gave up; nobody reads an answer
		}
		next(w, r)
	}
}
