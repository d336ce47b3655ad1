package main

import "testing"

// The node proof's section survives a new report; nothing else of the old
// one does.
func TestKeptSection(t *testing.T) {
	cases := map[string]string{
		"# Benchmarks\n\n## Budgets\nold\n":                                    "",
		"# B\n\n## Time to a working cluster\n\nfigures\n":                     "\n## Time to a working cluster\n\nfigures\n",
		"# B\n\n## Time to a working cluster\n\nfigures\n\n## Later\nold\n":    "\n## Time to a working cluster\n\nfigures\n",
		"# B\n## 1. Go\nx\n## Time to a working cluster\nfig\n| a | b |\n\n\n": "\n## Time to a working cluster\nfig\n| a | b |\n",
	}
	for old, want := range cases {
		if got := keptSection(old); got != want {
			t.Errorf("keptSection(%q) = %q, want %q", old, got, want)
		}
	}
}
