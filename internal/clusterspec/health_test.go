package clusterspec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The remediation settings: defaults when absent (and absent from the spec,
// so an older request keeps its fingerprint), "0" off, the bounds refused
// with their exact messages.
func TestRemediationSettings(t *testing.T) {
	base := `"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3`
	plain, err := decode(t, `{`+base+`}`).Validate()
	if after, pct := plain.Remediation(); err != nil || after != 5*time.Minute || pct != 40 {
		t.Fatalf("absent: %v %d %v, want 5m and 40", after, pct, err)
	}
	if b, _ := json.Marshal(plain); strings.Contains(string(b), "unhealthy") {
		t.Errorf("absent settings are in the spec: %s", b)
	}
	for body, want := range map[string]time.Duration{`"0"`: 0, `"90s"`: 90 * time.Second, `"1m"`: time.Minute, `"24h"`: 24 * time.Hour} {
		s, err := decode(t, `{`+base+`,"unhealthy_after":`+body+`,"max_unhealthy_percent":0}`).Validate()
		if after, pct := s.Remediation(); err != nil || after != want || pct != 0 || s.Fingerprint() == plain.Fingerprint() {
			t.Errorf("unhealthy_after %s: %v %d %v, want %v and 0", body, after, pct, err, want)
		}
	}
	durationMsg := `unhealthy_after: must be "0" (remediation off) or a duration of whole seconds from 1m0s to 24h0m0s, such as "5m"`
	for body, want := range map[string]string{
		`"unhealthy_after":"59s"`:     durationMsg,
		`"unhealthy_after":"25h"`:     durationMsg,
		`"unhealthy_after":"90.5s"`:   durationMsg,
		`"unhealthy_after":"soon"`:    durationMsg,
		`"unhealthy_after":"-5m"`:     durationMsg,
		`"max_unhealthy_percent":101`: "max_unhealthy_percent: must be 0 to 100",
		`"max_unhealthy_percent":-1`:  "max_unhealthy_percent: must be 0 to 100",
	} {
		_, err := decode(t, `{`+base+`,`+body+`}`).Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
