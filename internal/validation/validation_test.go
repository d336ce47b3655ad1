package validation

import "testing"

func TestErrorsKeepsTableOrderAndSkipsPassingRows(t *testing.T) {
	err := Join(
		[]Rule{Check("a", false, "is bad"), Check("b", true, "never said")},
		[]Rule{Check("c[0]", false, "is worse")},
	)
	if err == nil || err.Error() != "a: is bad\nc[0]: is worse" {
		t.Fatalf("got %v", err)
	}
	if err := Join([]Rule{Check("a", true, "x")}); err != nil {
		t.Fatalf("passing rows: %v", err)
	}
}
