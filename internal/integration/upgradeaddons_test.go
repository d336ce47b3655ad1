package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// addonsCall asks (no body) or reports (body) the addons route as vm.
func (s *stack) addonsCall(vm vmProof, body string) stacktest.Response {
	s.t.Helper()
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	return s.VMCall(method, bundle.AddonsPathTemplate, vm.id, vm.imds, vm.access, body)
}

// An upgrade of a one-node flannel cluster, every VM played through its
// routes: the node is replaced by one at v1.36.3 (its bundle fetched in
// join mode, its phases reported), then the addons step asks the new node
// alone, which is answered flannel, kube-proxy and CoreDNS rendered at
// v1.36.3, exactly as its own bundle's manifests; its report ends the
// upgrade done. Before the cluster's version moved, no node is answered.
func TestUpgradeAppliesTheAddonsThroughItsNode(t *testing.T) {
	s := newStack(t, withShortDNSTTL)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2,"cni":"flannel"}`)
	s.bootAll(t, res.ControlPlaneVMIDs)
	s.clusters.Settings.Artifacts.DigestFallback = true // v1.36.3's files are not in the shipped manifest yet
	s.bundles.Artifacts.DigestFallback = true
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(res.ClusterID)+"/upgrade", `{"kubernetes_version":"v1.36.3"}`, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
	booted := slices.Clone(res.ControlPlaneVMIDs)
	var answeredBy []int64
	var files map[string]string // the newest node's bundle, fetched as it boots
	var answer nodebootstrap.AddonsAnswer
	for range 400 {
		s.reconcile(t)
		s.snapshotsUploaded(t)
		view := s.getCluster(t, res.ClusterID)
		for _, vm := range view.ControlPlaneVMIDs {
			if !slices.Contains(booted, vm) {
				booted = append(booted, vm)
				files = s.bundleFiles(vm)
				s.boot(t, vm, false)
			}
			r := s.addonsCall(s.proof(vm), "")
			if r.Status == http.StatusNoContent {
				continue
			}
			if r.Status != http.StatusOK {
				t.Fatalf("addons ask of vm %d = %d %s", vm, r.Status, r.Body)
			}
			if view.KubernetesVersion != "v1.36.3" {
				t.Fatalf("vm %d was answered the addons while the cluster is at %s", vm, view.KubernetesVersion)
			}
			r.JSON(t, &answer)
			answeredBy = append(answeredBy, vm)
			body, _ := json.Marshal(nodebootstrap.AddonsReport{KubernetesVersion: answer.KubernetesVersion})
			if rep := s.addonsCall(s.proof(vm), string(body)); rep.Status != http.StatusOK {
				t.Fatalf("addons report = %d %s", rep.Status, rep.Body)
			}
		}
		if s.upgradeStateOf(t, res.ClusterID) != "upgrading" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if state := s.upgradeStateOf(t, res.ClusterID); state != "done" {
		t.Fatalf("upgrade %s", state)
	}
	newNode := booted[len(booted)-1]
	if len(answeredBy) != 1 || answeredBy[0] != newNode {
		t.Fatalf("the addons were answered to %v, want once to the new node %d", answeredBy, newNode)
	}
	var order []string
	for _, m := range answer.Manifests {
		order = append(order, m.Name)
		if m.Content != files["/etc/exk8s/manifests/"+m.Name] {
			t.Errorf("the answered %s is not the new node's bundle's", m.Name)
		}
	}
	if answer.KubernetesVersion != "v1.36.3" || strings.Join(order, " ") != "flannel.yaml kube-proxy.yaml coredns.yaml" ||
		!strings.Contains(answer.Manifests[2].Content, "coredns/coredns:v1.14.2") {
		t.Errorf("answered %s %v", answer.KubernetesVersion, order)
	}
}

// snapshotsUploaded plays the snapshot's node: its upload verified (the
// snapshot route's own tests hold that part).
func (s *stack) snapshotsUploaded(t *testing.T) {
	if _, err := s.pool.Exec(context.Background(), `UPDATE etcd_snapshots SET state = 'uploaded', size_bytes = 4096,
		sha256 = repeat('ab', 32), finished_at = now() WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
}

func (s *stack) upgradeStateOf(t *testing.T, cluster int64) string {
	var state string
	if err := s.pool.QueryRow(context.Background(), `SELECT state FROM cluster_upgrades WHERE kube_cluster_id = $1
		ORDER BY id DESC LIMIT 1`, cluster).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}
