package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigPath is the file a merge writes: the first of $KUBECONFIG's
// files, else ~/.kube/config (as kubectl and `aws eks update-kubeconfig`
// choose it).
func kubeconfigPath(getenv func(string) string, home string) string {
	for _, p := range filepath.SplitList(getenv("KUBECONFIG")) {
		if p != "" {
			return p
		}
	}
	return filepath.Join(home, ".kube", "config")
}

// mergeKubeconfigFile merges incoming into the kubeconfig at path: its
// clusters, users and contexts replace those of the same names, every
// other entry stays, and its current context becomes the file's.
func mergeKubeconfigFile(path string, incoming []byte) error {
	in, err := clientcmd.Load(incoming)
	if err != nil {
		return fmt.Errorf("the API's kubeconfig does not parse: %w", err)
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return err
	}
	mergeInto(cfg, in)
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, out)
}

func loadKubeconfig(path string) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return clientcmdapi.NewConfig(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return cfg, nil
}

func mergeInto(cfg, in *clientcmdapi.Config) {
	for name, c := range in.Clusters {
		cfg.Clusters[name] = c
	}
	for name, u := range in.AuthInfos {
		cfg.AuthInfos[name] = u
	}
	for name, c := range in.Contexts {
		cfg.Contexts[name] = c
	}
	if in.CurrentContext != "" {
		cfg.CurrentContext = in.CurrentContext
	}
}

// writeFileAtomic replaces path with data, readable by its owner only: a
// temporary file beside it, synced, then renamed over it, so a reader (or
// a crash) never sees half a kubeconfig.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := writeAndSync(tmp, data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

func writeAndSync(f *os.File, data []byte) error {
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// execEntry is a kubeconfig whose user is an exec credential plugin:
// `k8sapi` run with args, as client-go runs `aws eks get-token`.
type execEntry struct {
	cluster, server, user, context string
	caPEM                          []byte
	args                           []string
}

// execKubeconfigFile renders e as a kubeconfig, its context current.
func execKubeconfigFile(e execEntry) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[e.cluster] = &clientcmdapi.Cluster{Server: e.server, CertificateAuthorityData: e.caPEM}
	cfg.AuthInfos[e.user] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: execCredentialAPIVersions[0], Command: "k8sapi", Args: e.args,
		// The plugin never prompts: it has the token or fails.
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		InstallHint:     "k8sapi credential runs the k8sapi CLI: put it on PATH",
	}}
	cfg.Contexts[e.context] = &clientcmdapi.Context{Cluster: e.cluster, AuthInfo: e.user}
	cfg.CurrentContext = e.context
	out, err := clientcmd.Write(*cfg)
	return string(out), err
}

// absolute is path made absolute (a kubeconfig is read from anywhere), or
// path itself when it cannot be.
func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
