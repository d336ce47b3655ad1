package devstack

import (
	"reflect"
	"testing"
)

// stack.env carries the whole Stack: a tool that reads it back
// (StackFromEnv) and asks FunctionEnv gets what the running stack gives
// each function, including a field added to Stack later.
func TestStackEnvRoundTrip(t *testing.T) {
	var st Stack
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		v.Field(i).SetString(v.Type().Field(i).Name + "-value")
	}
	env := map[string]string{}
	for _, kv := range st.Env() {
		env[kv[0]] = kv[1]
	}
	if got := StackFromEnv(env); got != st {
		t.Errorf("StackFromEnv(Env()) = %+v, want %+v", got, st)
	}
}

// The local switches a proof sets on its stack reach every function: a
// variable missing from passedThrough is silently not set (the node proof
// once waited a week for a CA rotation's distrust).
func TestLocalSwitchesArePassedThrough(t *testing.T) {
	got := PassedThrough(func(name string) (string, bool) { return name + "-value", true })
	for _, name := range []string{"K8SAPI_CA_DISTRUST_WAIT", "ETCD_SNAPSHOT_NODE_ENDPOINT", "LEAF_CERT_LIFETIME"} {
		if got[name] != name+"-value" {
			t.Errorf("%s not passed through: %v", name, got[name])
		}
	}
}
