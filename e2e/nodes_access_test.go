package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Where the operator's side of the exec credential lives on the initial
// node, which plays the operator's machine: the CLI, its kubeconfig and
// its cache.
const (
	operatorCLI        = "/usr/local/bin/k8sapi"
	operatorKubeconfig = "/root/exec.kubeconfig"
	operatorCache      = "/root/.cache"
)

// installOperatorCLI builds the product's CLI (cmd/k8sapi, static) into
// machine root's /usr/local/bin.
func installOperatorCLI(t *testing.T, root string) {
	build := exec.Command("go", "build", "-o", filepath.Join(root, operatorCLI), "./cmd/k8sapi")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fatalf(t, "building cmd/k8sapi: %v\n%s", err, out)
	}
}

// operatorToken is a new operator token of org 1 (the dev token's org),
// stored as the platform stores one; and its hash, to revoke it by.
func operatorToken(ctx context.Context, t *testing.T, st stack) (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		fatal(t, err)
	}
	token = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	hash = hex.EncodeToString(sum[:])
	conn, err := pgx.Connect(ctx, st.get(t, "DATABASE_URL"))
	if err != nil {
		fatal(t, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO principal_tokens (hash, org_id, scope, description, expires_at)
		VALUES ($1, 1, 'principal', 'e2e: the exec kubeconfig''s operator', now() + interval '1 hour')`, hash); err != nil {
		fatalf(t, "issuing an operator token: %v", err)
	}
	return token, hash
}

func revokeToken(ctx context.Context, t *testing.T, st stack, hash string) {
	conn, err := pgx.Connect(ctx, st.get(t, "DATABASE_URL"))
	if err != nil {
		fatal(t, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, hash); err != nil {
		fatalf(t, "revoking the operator token: %v", err)
	}
}

// checkExecKubeconfig: on the initial node as an operator's machine,
// `k8sapi kubeconfig` writes the exec entry; kubectl with it reaches the
// cluster by its DNS name as who asked in k8sapi:cluster-admins (the
// plugin making its key there); once the token is revoked and the cached
// credential is gone (as it is 15 minutes on), kubectl is refused a
// credential and fails.
func (p *provenCluster) checkExecKubeconfig(t *testing.T) []string {
	m := p.c.initial()
	installOperatorCLI(t, m.Root)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	token, hash := operatorToken(ctx, t, p.st)
	env := []string{"env", "HOME=/root", "XDG_CACHE_HOME=" + operatorCache, "K8SAPI_TOKEN=" + token}
	id := strconv.FormatInt(p.cl.ClusterID, 10)
	if out, err := m.Exec(ctx, append(env, operatorCLI, "--url", p.svc.apiURL, "kubeconfig", id, "--output-file", operatorKubeconfig)...); err != nil {
		fatalf(t, "k8sapi kubeconfig: %v\n%s", err, out)
	}
	kubeconfig := m.Root + operatorKubeconfig
	if raw, err := os.ReadFile(kubeconfig); err != nil || strings.Contains(string(raw), "client-key-data") || !strings.Contains(string(raw), "command: k8sapi") {
		fatalf(t, "the exec kubeconfig (%v):\n%s", err, raw)
	}
	kubectl := func(ctx context.Context, args ...string) ([]byte, error) {
		return m.Exec(ctx, slices.Concat(env, []string{"kubectl", "--kubeconfig=" + operatorKubeconfig}, args)...)
	}
	sum := sha256.Sum256([]byte(token))
	wantUser := "k8sapi:org:1:token:" + hex.EncodeToString(sum[:])[:12]
	eventually(t, p.r, "kubectl with the exec entry is the operator in "+clusterAdminsGroup, nil, 2*time.Minute, func(ctx context.Context) (string, error) {
		out, err := kubectl(ctx, "auth", "whoami", "-o", "json")
		if err != nil {
			return "", err
		}
		var review struct {
			Status struct {
				UserInfo struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		if err := json.Unmarshal(out, &review); err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		u := review.Status.UserInfo
		if u.Username != wantUser || !slices.Contains(u.Groups, clusterAdminsGroup) || slices.Contains(u.Groups, "system:masters") {
			return "", fmt.Errorf("authenticated as %q in %v, want %q in %s", u.Username, u.Groups, wantUser, clusterAdminsGroup)
		}
		if out, err := kubectl(ctx, "get", "secrets", "-n", "kube-system", "-o", "name"); err != nil {
			return "", fmt.Errorf("listing kube-system's Secrets: %v: %s", err, out)
		}
		return u.Username + " in " + strings.Join(u.Groups, ","), nil
	})
	revokeToken(ctx, t, p.st, hash)
	// The cache holds a credential of at most 15 minutes; gone, as it is
	// by then, the plugin must ask with the revoked token.
	if out, err := m.Exec(ctx, "rm", "-rf", operatorCache+"/k8sapi"); err != nil {
		fatalf(t, "clearing the credential cache: %v: %s", err, out)
	}
	out, err := kubectl(ctx, "get", "nodes")
	if err == nil || !strings.Contains(string(out), "unauthenticated") {
		errorf(t, "kubectl with the exec entry after the token's revocation: %v\n%s; want the plugin's 401 (unauthenticated)", err, out)
	}
	return []string{"kubectl with the exec entry worked on a node as " + wantUser + " in " + clusterAdminsGroup,
		"and stopped once its token was revoked (the plugin's 401)"}
}
