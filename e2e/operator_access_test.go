package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The operators' group (pki.ClusterAdminsGroup) and its binding in
// control-plane-rbac.yaml.
const clusterAdminsGroup = "k8sapi:cluster-admins"

// operatorCredential asks the stack's credential route to sign a key made
// here, as the dev token's operator: the certificate and key (PEM), and
// when the certificate expires.
func operatorCredential(t *testing.T, st stack, clusterID int64) (certPEM, keyPEM []byte, expires time.Time) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		fatal(t, err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		fatal(t, err)
	}
	body, _ := json.Marshal(map[string]string{"csr": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))})
	var issued struct {
		Certificate string    `json:"certificate"`
		ExpiresAt   time.Time `json:"expires_at"`
	}
	raw := apiCall(t, st, http.MethodPost, fmt.Sprintf("/clusters/%d/credentials", clusterID), string(body), http.StatusCreated)
	if err := json.Unmarshal(raw, &issued); err != nil {
		fatal(t, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		fatal(t, err)
	}
	return []byte(issued.Certificate), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), issued.ExpiresAt
}

// checkOperatorsThroughRBAC: an exec credential of POST
// /clusters/{id}/credentials (a key made here, a certificate of 15
// minutes) authenticates at a real API server as who asked in k8sapi's
// group, not system:masters, and is cluster-admin through the
// k8sapi:cluster-admins binding alone: with the binding deleted (by the
// initial node's system:masters identity) the same certificate is
// refused, and re-applied it works again.
func checkOperatorsThroughRBAC(t *testing.T, r *harness.Run, st stack, cl clusterResponse, adminCfg *rest.Config, n1 *node, dial harness.DialFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rbac := n1.read(t, addonManifestsDir+"/control-plane-rbac.yaml")
	if _, err := harness.Apply(ctx, adminCfg, rbac); err != nil {
		fatalf(t, "applying control-plane-rbac.yaml: %v", err)
	}
	// Whatever happens below, the later steps find the binding.
	defer func() {
		if _, err := harness.Apply(context.Background(), adminCfg, rbac); err != nil {
			errorf(t, "re-applying control-plane-rbac.yaml: %v", err)
		}
	}()
	certPEM, keyPEM, expires := operatorCredential(t, st, cl.ClusterID)
	if left := time.Until(expires); left > 15*time.Minute || left < 13*time.Minute {
		errorf(t, "the credential expires in %v, want 15 minutes", left)
	}
	cfg, err := harness.KubeConfig([]byte(cl.Kubeconfig), "", dial, map[string]string{cl.ControlPlaneDNSName + ":6443": n1.ip() + ":6443"})
	if err != nil {
		fatal(t, err)
	}
	cfg.CertData, cfg.KeyData = certPEM, keyPEM // the founding's cluster entry, the credential's user
	operator := kubernetes.NewForConfigOrDie(cfg)
	review, err := operator.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		fatalf(t, "the credential: SelfSubjectReview: %v", err)
	}
	sum := sha256.Sum256([]byte(st.get(t, "DEV_TOKEN")))
	u := review.Status.UserInfo
	if u.Username != "k8sapi:org:1:token:"+hex.EncodeToString(sum[:])[:12] || !slices.Contains(u.Groups, clusterAdminsGroup) || slices.Contains(u.Groups, "system:masters") {
		errorf(t, "the credential authenticates as %q in %v; want the dev token's operator in %s, not system:masters", u.Username, u.Groups, clusterAdminsGroup)
	}
	listSecrets := func(ctx context.Context) error {
		_, err := operator.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		return err
	}
	eventually(t, r, "the operator's credential lists kube-system's Secrets", []string{n1.label("kube-apiserver")}, time.Minute, func(ctx context.Context) (string, error) {
		return "200", listSecrets(ctx)
	})
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, clusterAdminsGroup, metav1.DeleteOptions{}); err != nil {
		fatalf(t, "deleting the %s binding: %v", clusterAdminsGroup, err)
	}
	eventually(t, r, "without the binding the same credential is refused", []string{n1.label("kube-apiserver")}, time.Minute, func(ctx context.Context) (string, error) {
		if err := listSecrets(ctx); !apierrors.IsForbidden(err) {
			return "", fmt.Errorf("listing Secrets without the binding: want 403, got %v", err)
		}
		return "403", nil
	})
	if _, err := harness.Apply(ctx, adminCfg, rbac); err != nil {
		fatalf(t, "re-applying control-plane-rbac.yaml: %v", err)
	}
	eventually(t, r, "the binding back, the credential lists Secrets again", []string{n1.label("kube-apiserver")}, time.Minute, func(ctx context.Context) (string, error) {
		return "200", listSecrets(ctx)
	})
	t.Logf("operator credential: %s in %v, cluster-admin through %s only", u.Username, u.Groups, clusterAdminsGroup)
}
