package clusterspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/validation"
)

// ControlPlaneCounts are the sizes a control plane may have: one node, or
// three, the smallest etcd cluster that survives losing a member.
var ControlPlaneCounts = []int{1, 3}

// Limits of the request, in one place (the API description repeats them).
const (
	MaxSecurityGroups  = 5
	MinRootVolumeGiB   = 10
	MaxRootVolumeGiB   = 2048
	MaxSSHPubkeyBytes  = 8 << 10
	MaxInstanceTypeLen = 64
)

// Request is the body of POST /clusters. Pointers tell "absent" from zero so
// defaults apply only to absent fields. There is no org field: the org comes
// from the bearer token.
type Request struct {
	ControlPlaneCount        *int    `json:"control_plane_count"`
	ControlPlaneImageID      *int64  `json:"control_plane_image_id"`
	ControlPlaneInstanceType *string `json:"control_plane_instance_type"`
	ZoneID                   *int64  `json:"zone_id"`
	SubnetID                 *int64  `json:"subnet_id"`
	SecurityGroupIDs         []int64 `json:"security_group_ids"`
	AllocatePublicIPv4       *bool   `json:"allocate_public_ipv4"`
	SSHPubkey                *string `json:"ssh_pubkey"`
	RootVolumeSizeGiB        *int    `json:"root_volume_size_gib"`
	KeyAlgorithm             *string `json:"key_algorithm"`
	CNI                      *string `json:"cni"`
	// KubernetesVersion is one of artifacts.Releases; absent: the
	// deployment's (KUBERNETES_VERSION).
	KubernetesVersion *string `json:"kubernetes_version"`
	// RestoreFrom founds the cluster from an uploaded etcd snapshot of
	// another of the org's clusters (restore.go).
	RestoreFrom *RestoreRequest `json:"restore_from"`
	// UnhealthyAfter and MaxUnhealthyPercent are the cluster's remediation
	// settings (health.go).
	UnhealthyAfter      *string `json:"unhealthy_after"`
	MaxUnhealthyPercent *int    `json:"max_unhealthy_percent"`
}

// RestoreRequest names the snapshot a cluster is founded from.
type RestoreRequest struct {
	ClusterID  *int64 `json:"cluster_id"`
	SnapshotID *int64 `json:"snapshot_id"`
}

// Spec is a validated Request with defaults applied.
type Spec struct {
	ControlPlaneCount        int              `json:"control_plane_count"`
	ControlPlaneImageID      int64            `json:"control_plane_image_id"`
	ControlPlaneInstanceType string           `json:"control_plane_instance_type"`
	ZoneID                   int64            `json:"zone_id"`
	SubnetID                 int64            `json:"subnet_id"`
	SecurityGroupIDs         []int64          `json:"security_group_ids"`
	AllocatePublicIPv4       bool             `json:"allocate_public_ipv4"`
	SSHPubkey                string           `json:"ssh_pubkey"`
	RootVolumeSizeGiB        int              `json:"root_volume_size_gib"`
	KeyAlgorithm             pki.Algorithm    `json:"key_algorithm"`
	CNI                      clusterfacts.CNI `json:"cni"`
	// KubernetesVersion is as asked, "" for the deployment's: omitted when
	// absent, so a request without it keeps the fingerprint it had before
	// versions could be chosen.
	KubernetesVersion string `json:"kubernetes_version,omitempty"`
	// Omitted when absent: a request without it keeps the fingerprint it
	// had before restores existed.
	RestoreFrom *RestoreRef `json:"restore_from,omitempty"`
	// The remediation settings as given, omitted when absent
	// (Spec.Remediation applies the defaults).
	UnhealthyAfterSeconds *int `json:"unhealthy_after_seconds,omitempty"`
	MaxUnhealthyPercent   *int `json:"max_unhealthy_percent,omitempty"`
}

// RestoreRef is a validated RestoreRequest.
type RestoreRef struct {
	ClusterID  int64 `json:"cluster_id"`
	SnapshotID int64 `json:"snapshot_id"`
}

var instanceTypePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.\-]*$`)

// Validate applies defaults and returns every problem at once, each with its
// field name, joined as one 400.
func (r Request) Validate() (Spec, error) {
	s := r.withDefaults()
	if err := invalid(requestRules(r, s), securityGroupRules(r.SecurityGroupIDs), optionRules(r, s), restoreRules(r.RestoreFrom),
		remediationRules(r.UnhealthyAfter, r.MaxUnhealthyPercent)); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// withDefaults is the request with every absent field at its default; the
// rules below say whether the result is valid.
func (r Request) withDefaults() Spec {
	s := Spec{
		ControlPlaneCount: valueOr(r.ControlPlaneCount, 1), ControlPlaneImageID: valueOr(r.ControlPlaneImageID, 0),
		ControlPlaneInstanceType: valueOr(r.ControlPlaneInstanceType, ""), ZoneID: valueOr(r.ZoneID, 1),
		SubnetID: valueOr(r.SubnetID, 0), SecurityGroupIDs: append([]int64{}, r.SecurityGroupIDs...),
		AllocatePublicIPv4: valueOr(r.AllocatePublicIPv4, false), SSHPubkey: strings.TrimSpace(valueOr(r.SSHPubkey, "")),
		RootVolumeSizeGiB: valueOr(r.RootVolumeSizeGiB, 0),
	}
	s.KeyAlgorithm, _ = pki.ParseAlgorithm(valueOr(r.KeyAlgorithm, "")) // refused by optionRules
	s.CNI, _ = clusterfacts.ParseCNI(valueOr(r.CNI, ""))                // refused by optionRules
	s.KubernetesVersion = valueOr(r.KubernetesVersion, "")
	if r.RestoreFrom != nil {
		s.RestoreFrom = &RestoreRef{ClusterID: valueOr(r.RestoreFrom.ClusterID, 0), SnapshotID: valueOr(r.RestoreFrom.SnapshotID, 0)}
	}
	remediationSpec(r, &s)
	return s
}

func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// rule is a row of the tables: field, whether its value passes, message.
var rule = validation.Check

// requestRules: the count, and the three required fields, each "is
// required" when absent and its own message when present but wrong.
func requestRules(r Request, s Spec) []validation.Rule {
	instanceType := strings.TrimSpace(s.ControlPlaneInstanceType)
	return []validation.Rule{
		foundingCountRule(s),
		rule("control_plane_image_id", r.ControlPlaneImageID != nil, "is required"),
		rule("control_plane_image_id", r.ControlPlaneImageID == nil || s.ControlPlaneImageID > 0, "must be a positive integer"),
		rule("control_plane_instance_type", instanceType != "", "is required"),
		rule("control_plane_instance_type", instanceType == "" ||
			len(s.ControlPlaneInstanceType) <= MaxInstanceTypeLen && instanceTypePattern.MatchString(s.ControlPlaneInstanceType),
			fmt.Sprintf("must be lowercase letters, digits, '.' and '-', at most %d characters", MaxInstanceTypeLen)),
		rule("zone_id", s.ZoneID > 0, "must be a positive integer"),
		rule("subnet_id", r.SubnetID != nil, "is required"),
		rule("subnet_id", r.SubnetID == nil || s.SubnetID > 0, "must be a positive integer"),
	}
}

// foundingCountRule: a cluster is founded with ControlPlaneCounts nodes
// (it grows to 5 by scaling, PATCH /clusters/{id}).
func foundingCountRule(s Spec) validation.Rule {
	return rule("control_plane_count", slices.Contains(ControlPlaneCounts, s.ControlPlaneCount),
		"must be 1 or 3 (etcd needs a majority: two members tolerate no more failures than one, and need both up)")
}

// securityGroupRules: at most MaxSecurityGroups ids, each positive and
// listed once.
func securityGroupRules(ids []int64) []validation.Rule {
	rules := []validation.Rule{
		rule("security_group_ids", len(ids) <= MaxSecurityGroups, fmt.Sprintf("must hold at most %d ids", MaxSecurityGroups)),
	}
	for i, id := range ids {
		field := fmt.Sprintf("security_group_ids[%d]", i)
		rules = append(rules,
			rule(field, id > 0, "must be a positive integer"),
			rule(field, id <= 0 || !slices.Contains(ids[:i], id), "is a duplicate"))
	}
	return rules
}

// optionRules: the optional fields, checked only when given.
func optionRules(r Request, s Spec) []validation.Rule {
	_, algErr := pki.ParseAlgorithm(valueOr(r.KeyAlgorithm, ""))
	_, cniErr := clusterfacts.ParseCNI(valueOr(r.CNI, ""))
	return []validation.Rule{
		rule("ssh_pubkey", len(s.SSHPubkey) <= MaxSSHPubkeyBytes && !strings.ContainsAny(s.SSHPubkey, "\r\n") && looksLikeSSHKey(s.SSHPubkey),
			"must be one OpenSSH public key line (ssh-ed25519, ssh-rsa or ecdsa-sha2-*)"),
		rule("root_volume_size_gib", r.RootVolumeSizeGiB == nil || s.RootVolumeSizeGiB >= MinRootVolumeGiB && s.RootVolumeSizeGiB <= MaxRootVolumeGiB,
			fmt.Sprintf("must be %d to %d", MinRootVolumeGiB, MaxRootVolumeGiB)),
		rule("key_algorithm", algErr == nil, validation.Describe(algErr)),
		rule("cni", cniErr == nil, validation.Describe(cniErr)),
		versionRule(r, s),
	}
}

// versionRule: a version asked for is one of the release table's.
func versionRule(r Request, s Spec) validation.Rule {
	return rule("kubernetes_version", r.KubernetesVersion == nil || supported(s.KubernetesVersion),
		"must be a supported Kubernetes version: "+artifacts.SupportedList()+" (GET /kubernetes-versions)")
}

// restoreRules: restore_from, when given, names both ids. Whether the
// snapshot exists and fits is asked of the database (restore.go).
func restoreRules(r *RestoreRequest) []validation.Rule {
	if r == nil {
		return nil
	}
	return []validation.Rule{
		rule("restore_from.cluster_id", valueOr(r.ClusterID, 0) > 0, "is required, a positive integer"),
		rule("restore_from.snapshot_id", valueOr(r.SnapshotID, 0) > 0, "is required, a positive integer"),
	}
}

func supported(version string) bool {
	_, ok := artifacts.ReleaseOf(version)
	return ok
}

func looksLikeSSHKey(s string) bool {
	if s == "" {
		return true
	}
	for _, prefix := range []string{"ssh-ed25519 ", "ssh-rsa ", "ecdsa-sha2-", "sk-ssh-ed25519@openssh.com ", "sk-ecdsa-sha2-"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func joinMessages(errs []error) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Fingerprint identifies the normalized request, so an idempotency key
// reused with a different body is refused instead of silently replayed.
func (s Spec) Fingerprint() string { return fingerprintOf(s) }

// fingerprintOf is the SHA-256 of a validated request's JSON (maps marshal
// with sorted keys, so equal requests have equal fingerprints).
func fingerprintOf(spec any) string {
	b, _ := json.Marshal(spec) // structs of plain fields, maps and slices cannot fail to marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
