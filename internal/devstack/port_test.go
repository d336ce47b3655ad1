package devstack

import "testing"

// A stack on another port gets its own database.
func TestEachPortHasItsOwnDatabase(t *testing.T) {
	if got := newBoot(Options{}).opt.Database; got != LocalDatabase {
		t.Errorf("port 3000: %q, want %q", got, LocalDatabase)
	}
	if got := newBoot(Options{Port: 3143}).opt.Database; got != LocalDatabase+"_3143" {
		t.Errorf("port 3143: %q", got)
	}
	if got := newBoot(Options{Port: 3143, Database: "mine"}).opt.Database; got != "mine" {
		t.Errorf("a named database: %q", got)
	}
}
