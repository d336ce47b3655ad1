package progress

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

var opened = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return opened.Add(time.Duration(s) * time.Second) }

// Each step runs from the phase reached before it (the opening for the
// first) to its own; a skipped phase has no step; the running step starts
// at the current phase.
func TestTimelineSteps(t *testing.T) {
	tl := Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.EtcdStarted, OpenedAt: opened, UpdatedAt: at(60), Reached: map[string]time.Time{
		"bundle_fetched": at(4), "etcd_started": at(50), // prerequisites_installed's report was lost
		"no_such_phase": at(1),
	}}
	got, _ := json.Marshal(tl.Steps())
	want := `[{"phase":"bundle_fetched","started_at":"2026-11-24T12:00:00Z","ended_at":"2026-11-24T12:00:04Z","seconds":4},` +
		`{"phase":"etcd_started","started_at":"2026-11-24T12:00:04Z","ended_at":"2026-11-24T12:00:50Z","seconds":46}]`
	if string(got) != want {
		t.Errorf("steps\n%s\nwant\n%s", got, want)
	}
	if r := tl.Running(); r == nil || r.Phase != string(clusterfacts.KubeletStarted) || !r.StartedAt.Equal(at(50)) {
		t.Errorf("running %+v, want kubelet_started since %s", r, at(50))
	}
}

func TestTimelineRunning(t *testing.T) {
	for _, c := range []struct {
		name  string
		tl    Timeline
		phase string // "" for none
		since time.Time
	}{
		{"pending: fetching since the opening", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.Pending, OpenedAt: opened, UpdatedAt: at(9)},
			"bundle_fetched", opened},
		{"the initial node goes on to its addons", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.APIServerReady, OpenedAt: opened, Initial: true,
			Reached: map[string]time.Time{"apiserver_ready": at(70)}}, "addons_installed", at(70)},
		{"another node is ready next", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.APIServerReady, OpenedAt: opened,
			Reached: map[string]time.Time{"apiserver_ready": at(70)}}, "ready", at(70)},
		{"no recorded time: since the last report", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.KubeletStarted, OpenedAt: opened, UpdatedAt: at(30)},
			"apiserver_ready", at(30)},
		{"ready: nothing runs", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.Ready, OpenedAt: opened}, "", time.Time{}},
		{"failed: nothing runs", Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.Failed, OpenedAt: opened}, "", time.Time{}},
	} {
		r := c.tl.Running()
		switch {
		case c.phase == "" && r != nil:
			t.Errorf("%s: running %+v, want none", c.name, r)
		case c.phase != "" && (r == nil || r.Phase != c.phase || !r.StartedAt.Equal(c.since)):
			t.Errorf("%s: running %+v, want %s since %s", c.name, r, c.phase, c.since)
		}
	}
}

// A clock that disagrees with the opening's by a little never makes a
// step last less than nothing; a node that failed has its failure as its
// last step.
func TestTimelineNeverNegative(t *testing.T) {
	tl := Timeline{Role: clusterfacts.ControlPlane, Phase: clusterfacts.Failed, OpenedAt: at(5), Reached: map[string]time.Time{"bundle_fetched": at(4), "failed": at(9)}}
	steps := tl.Steps()
	if len(steps) != 2 || steps[0].Seconds != 0 || steps[1].Phase != string(clusterfacts.Failed) || steps[1].Seconds != 5 {
		t.Errorf("steps %+v", steps)
	}
}
