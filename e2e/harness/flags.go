package harness

import (
	"bufio"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Command is one component's command line exactly as a bundle renders it,
// plus the environment the renderer gave it.
type Command struct {
	Argv []string // argv[0] is the program as rendered (/usr/local/bin/etcd, kube-apiserver)
	Env  []string // KEY=value, in the order rendered
	// EnvFiles are systemd EnvironmentFile= paths (a leading "-" means optional).
	EnvFiles []string
	// Pre are the unit's ExecStartPre= command lines, in order (systemd
	// runs each before ExecStart; etcd's installs its CRL file, without
	// which etcd refuses every handshake).
	Pre [][]string
	// Mounts maps a container path to the host path it is mounted from
	// (static pods only); paths in Argv are container paths.
	Mounts map[string]string
}

// Program returns the base name of argv[0] (etcd, kube-apiserver, ...).
func (c Command) Program() string {
	if len(c.Argv) == 0 {
		return ""
	}
	return path.Base(c.Argv[0])
}

// Flag returns the value of --name=value (or "--name value") and whether it is set.
func (c Command) Flag(name string) (string, bool) {
	for i, a := range c.Argv {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(c.Argv) && !strings.HasPrefix(c.Argv[i+1], "-") {
			return c.Argv[i+1], true
		}
	}
	return "", false
}

// ParseUnit reads a systemd unit and returns the [Service] section's
// ExecStart (backslash-newline continuations joined, words split the way
// systemd splits them), its Environment= assignments and EnvironmentFile=
// paths. ${VAR} and $VAR in ExecStart are left as written: ExpandEnv
// resolves them once the environment files are known.
func ParseUnit(unit string) (Command, error) {
	var cmd Command
	section := ""
	var execStart string
	found := false
	for _, line := range joinContinuations(unit) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return Command{}, fmt.Errorf("unit line %q: want key=value", line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "ExecStart":
			if found {
				return Command{}, fmt.Errorf("unit has more than one ExecStart")
			}
			execStart, found = value, true
		case "Environment":
			words, err := splitWords(value)
			if err != nil {
				return Command{}, fmt.Errorf("Environment=%s: %w", value, err)
			}
			cmd.Env = append(cmd.Env, words...)
		case "EnvironmentFile":
			cmd.EnvFiles = append(cmd.EnvFiles, value)
		case "ExecStartPre":
			words, err := execWords(value)
			if err != nil {
				return Command{}, fmt.Errorf("ExecStartPre: %w", err)
			}
			cmd.Pre = append(cmd.Pre, words)
		}
	}
	if !found {
		return Command{}, fmt.Errorf("unit has no [Service] ExecStart")
	}
	words, err := execWords(execStart)
	if err != nil {
		return Command{}, fmt.Errorf("ExecStart: %w", err)
	}
	cmd.Argv = words
	return cmd, nil
}

// execWords splits an Exec*= value into its words, without the special
// executable prefixes (systemd.service(5)): -, @, :, +, !, !!.
func execWords(value string) ([]string, error) {
	words, err := splitWords(strings.TrimLeft(value, "-@:+!"))
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command line")
	}
	return words, nil
}

// joinContinuations returns the unit's logical lines: a line ending in a
// backslash continues on the next one (the backslash becomes a space), as
// systemd.syntax(7) says; comment lines never continue.
func joinContinuations(s string) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			// A comment is a line of its own, and is skipped inside a continuation.
			if cur.Len() == 0 {
				out = append(out, line)
			}
			continue
		}
		if cont, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			cur.WriteString(cont)
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// splitWords splits a command line as systemd does: whitespace separates
// words, double and single quotes group, backslash escapes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != '\'' && r == '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
			inWord = true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ParseEnvFile reads a systemd EnvironmentFile (also a shell-sourceable
// KEY=value file): comments and blank lines skipped, one level of quotes
// removed, a leading "export " accepted.
func ParseEnvFile(content string) ([]string, error) {
	var env []string
	for _, line := range joinContinuations(content) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("env file line %q: want KEY=value", line)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env = append(env, strings.TrimSpace(k)+"="+v)
	}
	return env, nil
}

// ExpandEnv resolves ${VAR} and $VAR in argv from env (systemd semantics:
// a word that is exactly $VAR splits on whitespace; ${VAR} inside a word
// does not). An unknown variable is an error: a typo must not boot.
func ExpandEnv(argv []string, env []string) ([]string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var missing []string
	lookup := func(name string) string {
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	}
	var out []string
	for _, w := range argv {
		if name, ok := strings.CutPrefix(w, "$"); ok && isVarName(name) {
			out = append(out, strings.Fields(lookup(name))...)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(w); i++ {
			if w[i] == '$' && i+1 < len(w) && w[i+1] == '{' {
				end := strings.IndexByte(w[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("word %q: unterminated ${", w)
				}
				b.WriteString(lookup(w[i+2 : i+end]))
				i += end
				continue
			}
			b.WriteByte(w[i])
		}
		out = append(out, b.String())
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("undefined variables in command line: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// ParsePodManifest reads a static pod manifest and returns its first
// container's command followed by its args, the literal env values, and
// the hostPath mounts (container path -> host path).
func ParsePodManifest(manifest string) (Command, error) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(manifest), &pod); err != nil {
		return Command{}, fmt.Errorf("decoding pod manifest: %w", err)
	}
	if pod.Kind != "Pod" {
		return Command{}, fmt.Errorf("manifest kind %q, want Pod", pod.Kind)
	}
	if len(pod.Spec.Containers) == 0 {
		return Command{}, fmt.Errorf("pod %s has no containers", pod.Name)
	}
	c := pod.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return Command{}, fmt.Errorf("pod %s container %s has no command", pod.Name, c.Name)
	}
	cmd := Command{Argv: argv, Mounts: map[string]string{}}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return Command{}, fmt.Errorf("pod %s env %s: valueFrom is not supported for a static pod", pod.Name, e.Name)
		}
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range c.VolumeMounts {
		if hp, ok := hostPaths[m.Name]; ok {
			cmd.Mounts[path.Clean(m.MountPath)] = path.Clean(hp)
		}
	}
	return cmd, nil
}

// hostRoots are the top-level folders whose paths a node's root folder
// stands in for. Values such as etcd's /registry prefix are not paths.
var hostRoots = []string{"etc", "var", "run", "opt", "usr", "srv", "root", "home", "tmp"}

// IsHostPath says whether s is an absolute filesystem path under one of
// the host folders a bundle may name.
func IsHostPath(s string) bool {
	if !strings.HasPrefix(s, "/") {
		return false
	}
	first, _, _ := strings.Cut(s[1:], "/")
	for _, r := range hostRoots {
		if first == r {
			return true
		}
	}
	return false
}

// HostPath maps a container path through the pod's mounts (the longest
// mount prefix wins) to the path on the host.
func (c Command) HostPath(p string) string {
	best := ""
	for mp := range c.Mounts {
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > len(best) {
			best = mp
		}
	}
	if best == "" {
		return p
	}
	return path.Join(c.Mounts[best], strings.TrimPrefix(p, best))
}

// Reroot returns a copy of the command line whose filesystem paths are
// moved under root (after container paths are mapped to host paths);
// nothing else changes. argv[0] is kept: the caller picks the binary.
// A value is split on "," and on an inner "key=" so lists of paths
// (--foo=/a,/b) and keyed paths (name=/a) are handled too.
func (c Command) Reroot(root string) []string {
	out := make([]string, len(c.Argv))
	out[0] = c.Argv[0]
	for i, a := range c.Argv[1:] {
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			out[i+1] = name + "=" + c.rerootList(root, value)
			continue
		}
		out[i+1] = c.rerootList(root, a)
	}
	return out
}

func (c Command) rerootList(root, value string) string {
	parts := strings.Split(value, ",")
	for i, p := range parts {
		key, rest, keyed := strings.Cut(p, "=")
		switch {
		case IsHostPath(p):
			parts[i] = RerootPath(root, c.HostPath(p))
		case keyed && IsHostPath(rest):
			parts[i] = key + "=" + RerootPath(root, c.HostPath(rest))
		}
	}
	return strings.Join(parts, ",")
}

// RerootPath puts an absolute host path under root.
func RerootPath(root, p string) string {
	return path.Join(root, p)
}

// RerootEnv re-roots the values of KEY=value pairs that are host paths.
func (c Command) RerootEnv(root string, env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, k+"="+c.rerootList(root, v))
	}
	return out
}
