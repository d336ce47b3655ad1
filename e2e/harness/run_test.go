package harness

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestStopWaves(t *testing.T) {
	var procs []*Proc
	for _, n := range []string{"stack", "n1/etcd", "n2/etcd", "n1/kube-apiserver", "n2/kube-apiserver", "n1/kube-scheduler"} {
		procs = append(procs, &Proc{Name: n})
	}
	var got []string
	for _, w := range stopWaves(procs) {
		var names []string
		for _, p := range w {
			names = append(names, p.Name)
		}
		got = append(got, strings.Join(names, " "))
	}
	want := []string{"n1/kube-scheduler", "n2/kube-apiserver n1/kube-apiserver", "n2/etcd n1/etcd", "stack"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waves = %q, want %q", got, want)
	}
}

func TestErrorLines(t *testing.T) {
	p := t.TempDir() + "/x.log"
	log := "I0101 fine\nError: unknown flag: --bogus\nUsage:\n  --x\n" +
		`{"level":"info","msg":"ok"}` + "\n" + `{"level":"fatal","msg":"boom"}` + "\nE0101 12:00:00 bad\n"
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ErrorLines(p, 2)
	want := "Error: unknown flag: --bogus\n" + `{"level":"fatal","msg":"boom"}`
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if tail := TailFile(p, 1); tail != "E0101 12:00:00 bad" {
		t.Errorf("tail = %q", tail)
	}
}
