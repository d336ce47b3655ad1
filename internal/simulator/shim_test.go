package simulator_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/simulator"
)

// The IMDS half of the seed's bootstrap userdata shim, as shell, runs
// unchanged against the simulator with EXC_IMDS_BASE_URL=$SIM_URL/imds/<vm_id>.
const shimIMDS = `set -euo pipefail
IMDS_BASE_URL="${EXC_IMDS_BASE_URL:-http://imdsapi.excloud.in}"
IMDS_TOKEN="$(curl -fsS "${IMDS_BASE_URL}/token")"
NODE_ID="$(curl -fsS -H "X-exc-imds-token: ${IMDS_TOKEN}" "${IMDS_BASE_URL}/latest/identity/node-identity" | jq -r '.node_id')"
BOOTSTRAP_ACCESS_TOKEN="$(curl -fsS -H "X-exc-imds-token: ${IMDS_TOKEN}" "${IMDS_BASE_URL}/latest/identity/access-token" | jq -r '.access_token')"
echo "${NODE_ID} ${BOOTSTRAP_ACCESS_TOKEN}"
`

func TestSeedShimIMDSCalls(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/run installs it): the shim cannot run", tool)
		}
	}
	e := newEnv(t)
	id, err := e.cc.CreateInstance(e.ctx1, vm("cp-1"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", shimIMDS)
	cmd.Env = append(cmd.Environ(), "EXC_IMDS_BASE_URL="+e.srv.URL+"/imds/"+itoa(id))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shim: %v\n%s", err, out)
	}
	nodeID, access, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if nodeID != itoa(id) {
		t.Errorf("NODE_ID = %q, want %d", nodeID, id)
	}
	var org int64
	if err := e.db.QueryRow(context.Background(), `SELECT org_id FROM principal_tokens WHERE hash = $1`, simulator.HashToken(access)).Scan(&org); err != nil || org != org1 {
		t.Errorf("BOOTSTRAP_ACCESS_TOKEN: org %d, %v; want a stored token of org %d", org, err, org1)
	}
}
