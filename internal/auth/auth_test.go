package auth

import (
	"strings"
	"testing"
)

// Who names the org and the token's fingerprint (the start of its stored
// hash), never the token.
func TestWho(t *testing.T) {
	const token = "s3cret-operator-token"
	who := NewPrincipal(7, 0, token).Who()
	if who != "org:7:token:"+Hash(token)[:12] {
		t.Errorf("Who() = %q", who)
	}
	if strings.Contains(who, token) || NewPrincipal(7, 0, token+"x").Who() == who {
		t.Errorf("Who() = %q: the token, or not the token's", who)
	}
}
