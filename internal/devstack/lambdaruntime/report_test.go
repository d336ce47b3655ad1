package lambdaruntime

import (
	"strings"
	"testing"
	"time"
)

// Lambda bills the handler's time rounded up to the millisecond.
func TestBilledMillisRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, time.Microsecond: 1, time.Millisecond: 1, 1001 * time.Microsecond: 2, 12 * time.Millisecond: 12} {
		if got := BilledMillis(d); got != want {
			t.Errorf("BilledMillis(%s) = %d, want %d", d, got, want)
		}
	}
	if line := ReportLine("id", 1500*time.Microsecond, 512); !strings.Contains(line, "Billed Duration: 2 ms\tMemory Size: 512 MB") {
		t.Errorf("ReportLine = %q", line)
	}
}
