package platformauth

import (
	"context"
	"testing"
)

func TestToken(t *testing.T) {
	if _, ok := Token(context.Background()); ok {
		t.Fatal("empty context has a token")
	}
	if _, ok := Token(WithToken(context.Background(), "")); ok {
		t.Fatal("empty token reported as present")
	}
	got, ok := Token(WithToken(context.Background(), "abc"))
	if !ok || got != "abc" {
		t.Fatalf("Token = %q, %v; want abc, true", got, ok)
	}
}
