package devstack

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// The summary says how to get the CLI and point it at the stack, and
// whether the VMs boot (and, when not, how to make them).
func TestSummaryTellsTheCLIAndWhetherVMsBoot(t *testing.T) {
	for _, boot := range []bool{true, false} {
		var out strings.Builder
		printSummary(&out, Stack{APIURL: "http://127.0.0.1:3000"}, &samtemplate.Template{}, ".local/stack.env", boot)
		got := out.String()
		for _, want := range []string{
			"go build -o .local/bin/k8sapi ./cmd/k8sapi && export PATH=\"$PWD/.local/bin:$PATH\"",
			". .local/stack.env && export K8SAPI_URL=$API_URL K8SAPI_TOKEN=$DEV_TOKEN",
			"k8sapi create cluster --image 1 --instance-type c1.large --subnet 1 --wait",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("boot %v: the summary lacks %q:\n%s", boot, want, got)
			}
		}
		vms := map[bool]string{true: "VMs          boot as stand-ins (BOOT_VMS=1)", false: "VMs          do not boot"}[boot]
		if !strings.Contains(got, vms) || (!boot && !strings.Contains(got, "make local BOOT_VMS=1")) {
			t.Errorf("boot %v: the summary does not say %q:\n%s", boot, vms, got)
		}
	}
}
