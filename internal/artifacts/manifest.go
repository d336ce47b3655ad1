package artifacts

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// shippedManifest is k8sapi's own artifact manifest, reviewed like code
// (as kOps pins its hashes in code); scripts/pin-artifacts.sh fills it
// from upstream's published digests.
//
//go:embed artifact-pins.sha256
var shippedManifest string

// ShippedManifest is the artifact manifest k8sapi ships, parsed.
func ShippedManifest() (map[string]string, error) {
	pins, err := ParseManifest(shippedManifest)
	if err != nil {
		return nil, fmt.Errorf("the shipped artifact manifest: %w", err)
	}
	return pins, nil
}

// ParseManifest reads an artifact manifest: one "<sha256>  <file name>"
// line per artifact, as sha256sum writes them (a '*' before the name is
// allowed), blank lines and '#' comments skipped. Every bad line is
// reported by number; a file listed twice must have one digest.
func ParseManifest(text string) (map[string]string, error) {
	pins := map[string]string{}
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		if err := parseManifestLine(pins, strings.TrimSpace(line)); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
		}
	}
	return pins, errors.Join(errs...)
}

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fileRE   = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
)

// IsPin reports whether file and digest make one manifest line: an
// artifact file name and a lowercase hex SHA-256.
func IsPin(file, digest string) bool { return fileRE.MatchString(file) && sha256RE.MatchString(digest) }

func parseManifestLine(pins map[string]string, line string) error {
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return errors.New(`want "<sha256>  <file name>"`)
	}
	digest, file := strings.ToLower(fields[0]), strings.TrimPrefix(fields[1], "*")
	switch {
	case !sha256RE.MatchString(digest):
		return fmt.Errorf("%q is not a hex SHA-256", fields[0])
	case !fileRE.MatchString(file):
		return fmt.Errorf("%q is not an artifact file name", file)
	case pins[file] != "" && pins[file] != digest:
		return fmt.Errorf("%s is pinned twice with different digests", file)
	}
	pins[file] = digest
	return nil
}

// ManifestText renders pins as a manifest, sorted by file name.
func ManifestText(pins map[string]string) string {
	var b strings.Builder
	for _, f := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(&b, "%s  %s\n", pins[f], f)
	}
	return b.String()
}
