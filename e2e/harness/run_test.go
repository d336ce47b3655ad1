package harness

import (
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
