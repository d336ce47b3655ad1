package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The parsers the table's rows use: each turns a variable's text into its
// typed value or says what the value must look like. No error echoes the
// text: some variables carry credentials.

// checked is the parser of a text variable held to rule (nil: any text).
func checked(rule func(string) error) func(string) (any, error) {
	return func(s string) (any, error) {
		if rule == nil {
			return s, nil
		}
		return s, rule(s)
	}
}

func boolean(s string) (any, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return nil, errors.New("must be true or false")
	}
	return b, nil
}

// durationIn parses a Go duration from lo to hi (hi 0: no upper bound);
// want is the error that says so.
func durationIn(lo, hi time.Duration, want string) func(string) (any, error) {
	return func(s string) (any, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < lo || hi > 0 && d > hi {
			return nil, errors.New(want)
		}
		return d, nil
	}
}

// wholeNumber parses a decimal integer from lo to hi.
func wholeNumber[N int | int32](lo, hi N) func(string) (any, error) {
	return func(s string) (any, error) {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < int64(lo) || n > int64(hi) {
			return nil, fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		return N(n), nil
	}
}

// logLevel takes slog's four names only (not its offsets like info+2).
func logLevel(s string) (any, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		err := l.UnmarshalText([]byte(s))
		return l, err
	}
	return nil, errors.New("must be debug, info, warn or error")
}

func checkURL(schemes ...string) func(string) error {
	return func(s string) error {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return fmt.Errorf("must be an absolute URL (%s)", strings.Join(schemes, ", "))
		}
		for _, scheme := range schemes {
			if u.Scheme == scheme {
				return nil
			}
		}
		return fmt.Errorf("scheme must be one of %s", strings.Join(schemes, ", "))
	}
}

var (
	versionRE  = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	domainRE   = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	registryRE = regexp.MustCompile(`^[a-z0-9.-]+(:\d+)?(/[a-z0-9._/-]+)?$`)
)

func checkVersion(s string) error {
	if !versionRE.MatchString(s) {
		return errors.New("must look like v1.2.3")
	}
	return nil
}

func checkDomain(s string) error {
	if len(s) > 253 || !domainRE.MatchString(s) {
		return errors.New("must be a lower-case DNS domain like k8s.example.com")
	}
	return nil
}

// bucketRE is an S3 bucket name usable with virtual-hosted addresses and
// TLS: 3–63 lower-case letters, digits and hyphens (no dots), starting and
// ending with a letter or digit.
var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func checkBucket(s string) error {
	if !bucketRE.MatchString(s) {
		return errors.New("must be an S3 bucket name of 3-63 lower-case letters, digits and hyphens")
	}
	return nil
}

func checkRegistry(s string) error {
	if !registryRE.MatchString(s) {
		return errors.New("must be a registry host[:port][/path] without a scheme")
	}
	return nil
}

// Bounds of BOOTSTRAP_WINDOW: a VM needs minutes to boot and fetch; a
// window of more than a day is a standing credential, not a bootstrap.
const (
	minWindow = time.Minute
	maxWindow = 24 * time.Hour
)

// maxBudgetFactor bounds VM_CALL_BUDGET_FACTOR: a load benchmark on one
// machine drives a few VMs hard; more than that is no budget at all.
const maxBudgetFactor = 1000

func checkAbsPath(s string) error {
	if !strings.HasPrefix(s, "/") {
		return errors.New("must be an absolute file path")
	}
	return nil
}

func checkARN(s string) error {
	if !strings.HasPrefix(s, "arn:") {
		return errors.New("must be an ARN")
	}
	return nil
}

// maxDNSTTL bounds CONTROL_PLANE_DNS_TTL_SECONDS: a CA rotation waits the
// TTL out once per phase before it restarts the node the name moved off,
// so a day is already three days of waiting.
const maxDNSTTL = 86400
