package cli

import (
	"strings"
	"testing"
)

// set remediation sends only the settings given and says what the
// cluster does now; no setting, or a bad id, is a usage error; the API's
// refusal is shown as it came.
func TestSetRemediation(t *testing.T) {
	on := cluster(5, "active", "ready")
	on.UnhealthyAfter, on.MaxUnhealthyPercent = "10m0s", 30
	f := newFakeAPI(t)
	f.on("PATCH /clusters/5", ok(on))
	runCLI(t, f, nil, "set", "remediation", "5", "--unhealthy-after", "10m", "--max-unhealthy-percent", "30").wantOut(t,
		"remediation of cluster 5: a node unhealthy for 10m0s is replaced (workers while at most 30% of their pool is unhealthy)")
	if c := f.callsTo("PATCH /clusters/5"); len(c) != 1 || c[0].body != `{"max_unhealthy_percent":30,"unhealthy_after":"10m"}` {
		t.Errorf("calls %+v, want one with both settings", c)
	}
	off := cluster(5, "active", "ready")
	off.UnhealthyAfter, off.MaxUnhealthyPercent = "0s", 40
	f = newFakeAPI(t)
	f.on("PATCH /clusters/5", ok(off))
	runCLI(t, f, nil, "set", "remediation", "5", "--unhealthy-after", "0").wantOut(t, "remediation of cluster 5: off (unhealthy_after 0)")
	if c := f.callsTo("PATCH /clusters/5"); len(c) != 1 || c[0].body != `{"unhealthy_after":"0"}` {
		t.Errorf("calls %+v, want one with unhealthy_after alone", c)
	}
	runCLI(t, newFakeAPI(t), nil, "set", "remediation", "5").want(t, 2)
	runCLI(t, newFakeAPI(t), nil, "set", "remediation", "x", "--unhealthy-after", "1m").want(t, 2)
	f = newFakeAPI(t)
	f.on("PATCH /clusters/5", reply{status: 400, body: `{"error":{"code":"invalid_request","message":"unhealthy_after: must be \"0\" (remediation off) or a duration","request_id":"r-1"}}`})
	r := runCLI(t, f, nil, "set", "remediation", "5", "--unhealthy-after", "30s")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "invalid_request: unhealthy_after: must be") {
		t.Error(r.stderr)
	}
}
