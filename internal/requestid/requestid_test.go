package requestid

import (
	"context"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	if got := From(context.Background()); got != "" {
		t.Fatalf("empty context: %q", got)
	}
	if got := From(With(context.Background(), "abc")); got != "abc" {
		t.Fatalf("got %q", got)
	}
}
