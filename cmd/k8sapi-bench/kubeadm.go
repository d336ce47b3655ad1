package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// sideRow is one algorithm of the side-by-side: kubeadm's two phases
// against founding + one bundle here, both for one node.
type sideRow struct {
	alg           string
	kubeadm, ours []time.Duration
}

const kubeadmVersion = "v1.35.4"

// buildKubeadm builds upstream kubeadm from its own module (bench/kubeadm:
// k8s.io/kubernetes never enters the product's go.mod); GOCACHE makes a
// rebuild a link, and the e2e module's builds share most packages.
func buildKubeadm() (string, time.Duration, error) {
	bin, err := filepath.Abs(filepath.Join(benchDir, "bin", "kubeadm"))
	if err != nil {
		return "", 0, err
	}
	t := time.Now()
	ldflags := "-s -w" +
		" -X k8s.io/component-base/version.gitVersion=" + kubeadmVersion +
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35" +
		" -X k8s.io/component-base/version.gitTreeState=clean"
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./kubeadm")
	cmd.Dir = filepath.Join("bench", "kubeadm")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("building kubeadm: %w: %s", err, out)
	}
	return bin, time.Since(t), nil
}

const kubeadmConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.1.10
  bindPort: 6443
nodeRegistration:
  name: cp-1
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
certificatesDir: %s
controlPlaneEndpoint: exk8s-1-1.k8s.excloud.co.in:6443
encryptionAlgorithm: %s
`

// kubeadmOnce runs `init phase certs all` and `init phase kubeconfig all`
// for one node in a fresh directory and returns their wall time.
func kubeadmOnce(bin, alg string) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "k8sapi-bench-kubeadm-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "kubeadm.yaml")
	// --cert-dir cannot be mixed with --config: certificatesDir says it.
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kubeadmConfig, kubeadmVersion, filepath.Join(dir, "pki"), alg), 0o644); err != nil {
		return 0, err
	}
	t := time.Now()
	for _, args := range [][]string{
		{"init", "phase", "certs", "all", "--config", cfg},
		{"init", "phase", "kubeconfig", "all", "--config", cfg, "--kubeconfig-dir", filepath.Join(dir, "kubeconfig")},
	} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("kubeadm %v: %w: %s", args, err, out)
		}
	}
	return time.Since(t), nil
}

func runSideBySide(o options, st stack, r *report) error {
	bin, took, err := buildKubeadm()
	if err != nil {
		return err
	}
	r.kubeadmBuild = took
	c := newClient(st)
	var clusters []int64
	defer func() {
		for _, id := range clusters {
			if err := c.deleteCluster(id); err != nil {
				log.Printf("cleanup: %v", err)
			}
		}
	}()
	for _, alg := range [][2]string{{"ECDSA-P256", "ecdsa-p256"}, {"RSA-2048", "rsa-2048"}} {
		row := sideRow{alg: alg[1]}
		if _, err := kubeadmOnce(bin, alg[0]); err != nil { // warm the page cache
			return err
		}
		for range o.kubeadmRun {
			d, err := kubeadmOnce(bin, alg[0])
			if err != nil {
				return err
			}
			row.kubeadm = append(row.kubeadm, d)

			f, s1, err := c.found(o.subnet, 1, alg[1])
			if err != nil {
				return err
			}
			clusters = append(clusters, f.ClusterID)
			v, err := c.credentials(f.VMIDs[0], f.ClusterID) // the VM's IMDS steps: not k8sapi's time
			if err != nil {
				return err
			}
			s2, err := c.fetch(v)
			if err != nil {
				return err
			}
			row.ours = append(row.ours, s1.d+s2.d)
		}
		r.side = append(r.side, row)
	}
	return nil
}
