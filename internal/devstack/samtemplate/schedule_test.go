package samtemplate

import (
	"strings"
	"testing"
	"time"
)

// scheduleTemplate has a function with a Schedule event and one without.
const scheduleTemplate = `
Resources:
  TickFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/tick
      Events:
        Every:
          Type: Schedule
          Properties:
            Schedule: rate(5 minutes)
  ApiFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/api
      Events:
        Get:
          Type: HttpApi
          Properties:
            Path: /x
            Method: get
`

// A Schedule event's rate is the function's period; a function without one
// has none.
func TestScheduleIsTheRate(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(scheduleTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := tmpl.Function("TickFunction"); f.Schedule != 5*time.Minute {
		t.Fatalf("TickFunction schedule %s, want 5m", f.Schedule)
	}
	if f, _ := tmpl.Function("ApiFunction"); f.Schedule != 0 {
		t.Fatalf("ApiFunction schedule %s, want none", f.Schedule)
	}
}

// Only rate expressions have a period; anything else is refused with the
// function and event named.
func TestScheduleMustBeARate(t *testing.T) {
	for _, expr := range []string{"cron(0 * * * ? *)", "rate(0.5 minutes)", "rate(1 week)", ""} {
		bad := strings.Replace(scheduleTemplate, "rate(5 minutes)", expr, 1)
		_, err := ParseTemplate([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), "TickFunction.Events.Every") {
			t.Errorf("%q: %v, want an error naming TickFunction.Events.Every", expr, err)
		}
	}
	for expr, want := range map[string]time.Duration{"rate(1 minute)": time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour} {
		tmpl, err := ParseTemplate([]byte(strings.Replace(scheduleTemplate, "rate(5 minutes)", expr, 1)))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if f, _ := tmpl.Function("TickFunction"); f.Schedule != want {
			t.Errorf("%s = %s, want %s", expr, f.Schedule, want)
		}
	}
}
