package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The calls a removed worker's drain (exk8s-drain-node.sh) and a
// control-plane node's taint (exk8s-control-plane-taint.sh) make, made
// with the bundle's identities against the real API servers, Node
// authorizer and NodeRestriction, once control-plane-rbac.yaml is applied:
// what each may do, and what each may not.

const (
	drainNamespace = "default"
	taintKey       = "node-role.kubernetes.io/control-plane"
)

// clientOf is a clientset of the node's kubeconfig of that stem.
func clientOf(t *testing.T, nd *node, stem string, dial harness.DialFunc) *kubernetes.Clientset {
	cfg, err := harness.KubeConfig(nd.read(t, kubeconfigDir+"/"+stem+".kubeconfig"), "https://"+nd.ip()+":6443", dial, nil)
	if err != nil {
		fatal(t, err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// boundPod is a pod bound to node, labelled app.
func boundPod(name, node, app string) *corev1.Pod {
	no := false
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: drainNamespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "c", Image: "none"}}}}
}

func evict(ctx context.Context, c *kubernetes.Clientset, pod string) error {
	return c.PolicyV1().Evictions(drainNamespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: drainNamespace}})
}

// taintsPatch is a patch of node's taints as they are now, with the
// control-plane taint added (or removed) and extra added: kubectl taint's
// patch, which names the whole list.
func taintsPatch(ctx context.Context, c *kubernetes.Clientset, node string, add bool, extra ...corev1.Taint) ([]byte, error) {
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	taints := extra
	for _, tt := range n.Spec.Taints {
		if tt.Key != taintKey {
			taints = append(taints, tt)
		}
	}
	if add {
		taints = append(taints, corev1.Taint{Key: taintKey, Effect: corev1.TaintEffectNoSchedule})
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
}

// setTaint adds or removes the control-plane taint on node as c.
func setTaint(ctx context.Context, c *kubernetes.Clientset, node string, add bool) error {
	patch, err := taintsPatch(ctx, c, node, add)
	if err == nil {
		_, err = c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	return err
}

// want403 fails unless err is a 403.
func want403(t *testing.T, what string, err error) {
	if !apierrors.IsForbidden(err) {
		errorf(t, "%s: want 403 Forbidden, got %v", what, err)
	}
}

// guardedPodHeld makes guarded a Running, Ready pod whose budget allows
// no disruption, and waits until the disruption controller says so.
func guardedPodHeld(t *testing.T, r *harness.Run, admin *kubernetes.Clientset, pod *corev1.Pod) {
	ctx := context.Background()
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: drainNamespace},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if _, err := admin.PolicyV1().PodDisruptionBudgets(drainNamespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		fatal(t, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := admin.CoreV1().Pods(drainNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		fatal(t, err)
	}
	eventually(t, r, "the guarded pod's budget allows no disruption", nil, time.Minute, func(ctx context.Context) (string, error) {
		got, err := admin.PolicyV1().PodDisruptionBudgets(drainNamespace).Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil || got.Status.ObservedGeneration < got.Generation || got.Status.ExpectedPods != 1 || got.Status.DisruptionsAllowed != 0 {
			return "", fmt.Errorf("budget %+v (%v)", got.Status, err)
		}
		return "0 disruptions allowed", nil
	})
}

// checkNodeSelfRemoval: node 2's kubelet identity drains itself (cordon,
// its pods listed by node, evicted through the eviction API, a budget's
// refusal a 429) and deletes its own Node, and may touch nothing of node
// 1; node 1's control-plane taint identity taints and untaints a Node,
// gives it the role label, and may not delete one, read pods, or (its
// admission policy) change anything else of a Node; a kubelet may not
// taint its own Node.
func checkNodeSelfRemoval(t *testing.T, r *harness.Run, adminCfg *rest.Config, nodes []*node, dial harness.DialFunc) {
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	n1, n2 := nodes[0], nodes[1]
	r.Suspect(n1.label("kube-apiserver"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := harness.Apply(ctx, adminCfg, n1.read(t, addonManifestsDir+"/control-plane-rbac.yaml")); err != nil {
		fatalf(t, "applying control-plane-rbac.yaml: %v", err)
	}
	k1, k2, taint := clientOf(t, n1, "kubelet", dial), clientOf(t, n2, "kubelet", dial), clientOf(t, n1, "control-plane-taint", dial)
	// The controller manager makes it too; a pod waits for it otherwise.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: drainNamespace}}
	if _, err := admin.CoreV1().ServiceAccounts(drainNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatal(t, err)
	}
	var guarded *corev1.Pod
	for _, p := range []*corev1.Pod{boundPod("drained-free", n2.name, "free"), boundPod("drained-guarded", n2.name, "guarded")} {
		created, err := admin.CoreV1().Pods(drainNamespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			fatal(t, err)
		}
		guarded = created
	}
	guardedPodHeld(t, r, admin, guarded)

	cordon := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := k2.CoreV1().Nodes().Patch(ctx, n2.name, types.StrategicMergePatchType, cordon, metav1.PatchOptions{}); err != nil {
		errorf(t, "node 2 cordoning its own Node: %v", err)
	}
	_, err := k2.CoreV1().Nodes().Patch(ctx, n1.name, types.StrategicMergePatchType, cordon, metav1.PatchOptions{})
	want403(t, "node 2 cordoning node 1", err)
	own, err := k2.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n2.name})
	if err != nil || len(own.Items) != 2 {
		errorf(t, "node 2 listing its pods by node: %v (%d pods, want 2)", err, len(own.Items))
	}
	_, err = k2.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	want403(t, "node 2 listing every pod", err)
	want403(t, "node 1 evicting node 2's pod", evict(ctx, k1, "drained-free"))
	if err := evict(ctx, k2, "drained-free"); err != nil {
		errorf(t, "node 2 evicting its own pod: %v", err)
	}
	if err := evict(ctx, k2, "drained-guarded"); !apierrors.IsTooManyRequests(err) {
		errorf(t, "node 2 evicting the pod its budget guards: want 429, got %v", err)
	}
	want403(t, "node 2 tainting its own Node", setTaint(ctx, k2, n2.name, true))
	want403(t, "node 2 deleting node 1's Node", k2.CoreV1().Nodes().Delete(ctx, n1.name, metav1.DeleteOptions{}))

	if _, err := taint.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		errorf(t, "the taint's identity listing Nodes: %v", err)
	}
	if err := setTaint(ctx, taint, n1.name, true); err != nil {
		errorf(t, "the taint's identity tainting node 1: %v", err)
	}
	_, err = taint.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	want403(t, "the taint's identity listing pods", err)
	// Its admission policy: that taint and the role label only, nothing
	// else of a Node.
	roleLabel := func(value string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, taintKey, value))
	}
	if _, err := taint.CoreV1().Nodes().Patch(ctx, n1.name, types.StrategicMergePatchType, roleLabel(`""`), metav1.PatchOptions{}); err != nil {
		errorf(t, "the taint's identity giving node 1 its role label: %v", err)
	}
	other, err := taintsPatch(ctx, taint, n1.name, true, corev1.Taint{Key: "e2e", Effect: corev1.TaintEffectNoSchedule})
	if err != nil {
		fatal(t, err)
	}
	for what, patch := range map[string][]byte{"cordoning node 1": cordon, "adding another taint": other,
		"labelling node 1":              []byte(`{"metadata":{"labels":{"e2e":"x"}}}`),
		"giving the role label a value": roleLabel(`"x"`), "removing the role label": roleLabel("null")} {
		_, err := taint.CoreV1().Nodes().Patch(ctx, n1.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) {
			errorf(t, "the taint's identity %s: want 422 from its admission policy, got %v", what, err)
		}
	}
	want403(t, "the taint's identity deleting a Node", taint.CoreV1().Nodes().Delete(ctx, n2.name, metav1.DeleteOptions{}))
	if err := setTaint(ctx, taint, n1.name, false); err != nil {
		errorf(t, "the taint's identity untainting node 1: %v", err)
	}

	if err := k2.CoreV1().Nodes().Delete(ctx, n2.name, metav1.DeleteOptions{}); err != nil {
		errorf(t, "node 2 deleting its own Node: %v", err)
	}
	t.Logf("node 2 cordoned, drained (a budget refused with 429) and deleted its own Node; the taint's identity tainted and labelled node 1")
}
