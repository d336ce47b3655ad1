package clusterspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

func decode(t *testing.T, body string) Request {
	t.Helper()
	var r Request
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestValidateAppliesDefaults(t *testing.T) {
	s, err := decode(t, `{"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3}`).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if s.ControlPlaneCount != 1 || s.ZoneID != 1 || s.KeyAlgorithm != pki.ECDSAP256 || s.CNI != clusterfacts.CNICilium || s.AllocatePublicIPv4 || len(s.SecurityGroupIDs) != 0 {
		t.Errorf("defaults: %+v", s)
	}
}

func TestValidateCollectsEveryErrorWithItsField(t *testing.T) {
	_, err := decode(t, `{"control_plane_count":4,"control_plane_image_id":0,"control_plane_instance_type":"E2 Medium",
		"zone_id":-1,"security_group_ids":[5,5,0,1,2,3],"root_volume_size_gib":4096,"ssh_pubkey":"x","key_algorithm":"rsa-1024","cni":"calico","kubernetes_version":"v1.29.0"}`).Validate()
	e, ok := apperr.As(err)
	if !ok || e.Kind() != apperr.KindInvalid {
		t.Fatalf("err = %v", err)
	}
	want := "control_plane_count: must be 1 or 3 (etcd needs a majority: two members tolerate no more failures than one, and need both up); " +
		"control_plane_image_id: must be a positive integer; " +
		"control_plane_instance_type: must be lowercase letters, digits, '.' and '-', at most 64 characters; " +
		"zone_id: must be a positive integer; " +
		"subnet_id: is required; " +
		"security_group_ids: must hold at most 5 ids; " +
		"security_group_ids[1]: is a duplicate; " +
		"security_group_ids[2]: must be a positive integer; " +
		"ssh_pubkey: must be one OpenSSH public key line (ssh-ed25519, ssh-rsa or ecdsa-sha2-*); " +
		"root_volume_size_gib: must be 10 to 2048; " +
		`key_algorithm: must be "ecdsa-p256" or "rsa-2048"; ` +
		`cni: must be "cilium", "bridge" or "flannel"; ` +
		"kubernetes_version: must be a supported Kubernetes version: v1.35.4, v1.36.3 (GET /kubernetes-versions)"
	if e.Message != want {
		t.Errorf("message:\n got %s\nwant %s", e.Message, want)
	}
}

// The other branch of each required field: absent or blank is "is
// required", present and out of range its own message.
func TestValidateSaysRequiredAndRangeApart(t *testing.T) {
	_, err := decode(t, `{"control_plane_instance_type":"  ","subnet_id":-2,"security_group_ids":[-1,-1],"ssh_pubkey":"ssh-rsa AAA\nssh-rsa BBB"}`).Validate()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	want := "control_plane_image_id: is required; " +
		"control_plane_instance_type: is required; " +
		"subnet_id: must be a positive integer; " +
		"security_group_ids[0]: must be a positive integer; " +
		"security_group_ids[1]: must be a positive integer; " +
		"ssh_pubkey: must be one OpenSSH public key line (ssh-ed25519, ssh-rsa or ecdsa-sha2-*)"
	if e.Message != want {
		t.Errorf("message:\n got %s\nwant %s", e.Message, want)
	}
	s, err := decode(t, `{"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3,"zone_id":2,
		"control_plane_count":3,"security_group_ids":[4,5],"allocate_public_ipv4":true,"ssh_pubkey":" ssh-ed25519 AAAA ",
		"root_volume_size_gib":20,"key_algorithm":"rsa-2048","cni":"bridge"}`).Validate()
	want2 := Spec{ControlPlaneCount: 3, ControlPlaneImageID: 7, ControlPlaneInstanceType: "e2.medium", ZoneID: 2, SubnetID: 3,
		SecurityGroupIDs: []int64{4, 5}, AllocatePublicIPv4: true, SSHPubkey: "ssh-ed25519 AAAA", RootVolumeSizeGiB: 20, KeyAlgorithm: pki.RSA2048,
		CNI: clusterfacts.CNIBridge}
	if err != nil || s.Fingerprint() != want2.Fingerprint() {
		t.Errorf("spec %+v, %v; want %+v", s, err, want2)
	}
}

func TestFingerprintFollowsTheNormalizedRequest(t *testing.T) {
	a, _ := decode(t, `{"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3}`).Validate()
	b, _ := decode(t, `{"control_plane_count":1,"zone_id":1,"cni":"cilium","control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3}`).Validate()
	c, _ := decode(t, `{"control_plane_count":2,"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3}`).Validate()
	d, _ := decode(t, `{"cni":"bridge","control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3}`).Validate()
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("explicit defaults changed the fingerprint")
	}
	if a.Fingerprint() == c.Fingerprint() || a.Fingerprint() == d.Fingerprint() {
		t.Error("a different count or CNI kept the fingerprint")
	}
}

func TestNames(t *testing.T) {
	if got := ClusterName(7, 42); got != "exk8s-7-2a" {
		t.Errorf("clusterName = %s", got)
	}
	if got := NodeName(1, 42); got != "cp-1.cluster-42.internal" {
		t.Errorf("nodeName = %s", got)
	}
}

// restore_from's rows: both ids required and positive; absent, it is no
// part of the spec (nor of the fingerprint a replay compares).
func TestValidateRestoreFrom(t *testing.T) {
	base := `"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3`
	_, err := decode(t, `{`+base+`,"restore_from":{"snapshot_id":0}}`).Validate()
	e, ok := apperr.As(err)
	want := "restore_from.cluster_id: is required, a positive integer; restore_from.snapshot_id: is required, a positive integer"
	if !ok || e.Kind() != apperr.KindInvalid || e.Message != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	s, err := decode(t, `{`+base+`,"restore_from":{"cluster_id":4,"snapshot_id":9}}`).Validate()
	if err != nil || s.RestoreFrom == nil || *s.RestoreFrom != (RestoreRef{ClusterID: 4, SnapshotID: 9}) {
		t.Fatalf("spec %+v, err %v", s.RestoreFrom, err)
	}
	plain, err := decode(t, `{`+base+`}`).Validate()
	if err != nil || plain.RestoreFrom != nil || plain.Fingerprint() == s.Fingerprint() {
		t.Fatalf("without restore_from: %+v %v", plain.RestoreFrom, err)
	}
	if b, _ := json.Marshal(plain); strings.Contains(string(b), "restore_from") {
		t.Fatalf("an empty founding's spec names restore_from: %s", b)
	}
}

// kubernetes_version is kept as asked, and a request without it keeps
// the fingerprint it had before versions could be chosen (a retried
// founding of then replays, not 409s).
func TestKubernetesVersionIsAsAskedAndAbsentKeepsTheFingerprint(t *testing.T) {
	base := `"control_plane_image_id":7,"control_plane_instance_type":"e2.medium","subnet_id":3`
	asked, err := decode(t, `{`+base+`,"kubernetes_version":"v1.36.3"}`).Validate()
	if err != nil || asked.KubernetesVersion != "v1.36.3" {
		t.Fatalf("asked v1.36.3: %+v %v", asked, err)
	}
	plain, err := decode(t, `{`+base+`}`).Validate()
	if err != nil || plain.KubernetesVersion != "" || plain.Fingerprint() == asked.Fingerprint() {
		t.Fatalf("absent: %+v %v", plain, err)
	}
	if b, _ := json.Marshal(plain); strings.Contains(string(b), "kubernetes_version") {
		t.Fatalf("an absent version is in the spec: %s", b)
	}
}
