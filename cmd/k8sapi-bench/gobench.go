package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// benchDir is where the tool keeps its builds and raw outputs (git-ignored).
const benchDir = ".local/bench"

// goBench is one benchmark's samples per algorithm.
type goBench struct {
	nsPerOp map[string][]float64 // alg -> samples
}

var benchLine = regexp.MustCompile(`^Benchmark(\w+)/alg=([\w-]+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

func runGoBench(o options, r *report) error {
	if err := os.MkdirAll(benchDir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(o.count), "./bench/gobench")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	raw := filepath.Join(benchDir, "gobench.txt")
	if err := os.WriteFile(raw, out, 0o644); err != nil {
		return err
	}
	r.goBench = map[string]*goBench{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[3], 64)
		b := r.goBench[m[1]]
		if b == nil {
			b = &goBench{nsPerOp: map[string][]float64{}}
			r.goBench[m[1]] = b
		}
		b.nsPerOp[m[2]] = append(b.nsPerOp[m[2]], ns)
	}
	if len(r.goBench) == 0 {
		return fmt.Errorf("no benchmark lines in go test output")
	}
	bs, err := benchstat()
	if err != nil {
		r.benchstat = "benchstat unavailable: " + err.Error()
		return nil
	}
	cmd = exec.Command(bs, "-col", "/alg", raw)
	cmd.Stderr = os.Stderr
	stat, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	r.benchstat = strings.TrimSpace(string(stat))
	return nil
}

// benchstat returns the benchstat binary, installing it from the Go module
// proxy into the git-ignored bench dir the first time.
func benchstat() (string, error) {
	bin, err := filepath.Abs(filepath.Join(benchDir, "bin"))
	if err != nil {
		return "", err
	}
	path := filepath.Join(bin, "benchstat")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cmd := exec.Command("go", "install", "golang.org/x/perf/cmd/benchstat@latest")
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install benchstat: %w: %s", err, out)
	}
	return path, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
