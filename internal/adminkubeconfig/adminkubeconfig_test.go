package adminkubeconfig

import (
	"errors"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
)

// The ttl rule's exact answers: the default, the bounds, and what is no
// duration.
func TestKubeconfigRequestLifetime(t *testing.T) {
	ttl := func(s string) *string { return &s }
	const bounds = "ttl: must be between 5m and 168h"
	const notDuration = `ttl: must be a Go duration such as "12h" or "90m"`
	for _, c := range []struct {
		ttl  *string
		want time.Duration
		msg  string
	}{
		{nil, 12 * time.Hour, ""},
		{ttl("5m"), 5 * time.Minute, ""},
		{ttl("168h"), 168 * time.Hour, ""},
		{ttl("1h30m"), 90 * time.Minute, ""},
		{ttl("300s"), 5 * time.Minute, ""},
		{ttl("4m59s"), 0, bounds},
		{ttl("168h0m1s"), 0, bounds},
		{ttl("-12h"), 0, bounds},
		{ttl("0"), 0, bounds},
		{ttl(""), 0, notDuration},
		{ttl("7d"), 0, notDuration},
		{ttl("12"), 0, notDuration},
		{ttl(" 12h"), 0, notDuration},
	} {
		got, err := KubeconfigRequest{TTL: c.ttl}.Lifetime()
		var e *apperr.Error
		switch {
		case c.msg == "" && (err != nil || got != c.want):
			t.Errorf("%v: %v, %v; want %v", c.ttl, got, err, c.want)
		case c.msg != "" && (!errors.As(err, &e) || e.Code != apperr.InvalidRequest || e.Message != c.msg):
			t.Errorf("%v: %v; want invalid_request %q", c.ttl, err, c.msg)
		}
	}
	if DefaultKubeconfigTTL < MinKubeconfigTTL || DefaultKubeconfigTTL > MaxKubeconfigTTL {
		t.Error("the default lifetime is outside the bounds")
	}
}
