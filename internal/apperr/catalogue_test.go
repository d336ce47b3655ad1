package apperr

import (
	"regexp"
	"testing"
)

var codeShape = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// Each code is defined once, looks like a code, has a kind with a status
// and a message to tell.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Catalogue() {
		if seen[c.String()] {
			t.Errorf("%q is defined twice", c)
		}
		seen[c.String()] = true
		if !codeShape.MatchString(c.String()) {
			t.Errorf("%q is not snake_case", c)
		}
		if c.Kind() < 0 || c.Kind() >= kindCount || c.Message() == "" {
			t.Errorf("%q: kind %d, message %q", c, c.Kind(), c.Message())
		}
	}
	for k, status := range statusOf {
		if status == 0 {
			t.Errorf("kind %d has no status", k)
		}
	}
}

// The constructors: the default message, a detail in its place, the cause
// kept for the logs only.
func TestConstructors(t *testing.T) {
	cause := errTest("dial tcp: refused")
	if e := DatabaseUnavailable.Wrap(cause); e.Message != "the database is unavailable" || e.Err != cause ||
		e.Status() != 503 || e.Error() != "database_unavailable: the database is unavailable: dial tcp: refused" {
		t.Errorf("Wrap: %+v", e)
	}
	if e := InvalidField.Detailf("%s: must be a %s", "zone_id", "number"); e.Message != "zone_id: must be a number" ||
		e.Kind() != KindInvalid || e.Err != nil || e.Code != InvalidField {
		t.Errorf("Detailf: %+v", e)
	}
	if text, _ := RateLimited.MarshalText(); string(text) != "rate_limited" {
		t.Errorf("MarshalText = %s", text)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
