package founding

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/pki"
)

// Limits of the request, in one place (the API description repeats them).
const (
	MaxControlPlaneCount = 3
	MaxSecurityGroups    = 5
	MinRootVolumeGiB     = 10
	MaxRootVolumeGiB     = 2048
	MaxSSHPubkeyBytes    = 8 << 10
	MaxInstanceTypeLen   = 64
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
}

// Spec is a validated Request with defaults applied.
type Spec struct {
	ControlPlaneCount        int           `json:"control_plane_count"`
	ControlPlaneImageID      int64         `json:"control_plane_image_id"`
	ControlPlaneInstanceType string        `json:"control_plane_instance_type"`
	ZoneID                   int64         `json:"zone_id"`
	SubnetID                 int64         `json:"subnet_id"`
	SecurityGroupIDs         []int64       `json:"security_group_ids"`
	AllocatePublicIPv4       bool          `json:"allocate_public_ipv4"`
	SSHPubkey                string        `json:"ssh_pubkey"`
	RootVolumeSizeGiB        int           `json:"root_volume_size_gib"`
	KeyAlgorithm             pki.Algorithm `json:"key_algorithm"`
}

var instanceTypePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.\-]*$`)

// Validate applies defaults and returns every problem at once, each with its
// field name, joined as one 400.
func (r Request) Validate() (Spec, error) {
	s := Spec{ControlPlaneCount: 1, ZoneID: 1}
	var errs []error
	bad := func(field, msg string) { errs = append(errs, fmt.Errorf("%s: %s", field, msg)) }

	if r.ControlPlaneCount != nil {
		s.ControlPlaneCount = *r.ControlPlaneCount
		if s.ControlPlaneCount < 1 || s.ControlPlaneCount > MaxControlPlaneCount {
			bad("control_plane_count", fmt.Sprintf("must be 1 to %d", MaxControlPlaneCount))
		}
	}
	switch {
	case r.ControlPlaneImageID == nil:
		bad("control_plane_image_id", "is required")
	case *r.ControlPlaneImageID <= 0:
		bad("control_plane_image_id", "must be a positive integer")
	default:
		s.ControlPlaneImageID = *r.ControlPlaneImageID
	}
	switch {
	case r.ControlPlaneInstanceType == nil || strings.TrimSpace(*r.ControlPlaneInstanceType) == "":
		bad("control_plane_instance_type", "is required")
	case len(*r.ControlPlaneInstanceType) > MaxInstanceTypeLen || !instanceTypePattern.MatchString(*r.ControlPlaneInstanceType):
		bad("control_plane_instance_type", fmt.Sprintf("must be lowercase letters, digits, '.' and '-', at most %d characters", MaxInstanceTypeLen))
	default:
		s.ControlPlaneInstanceType = *r.ControlPlaneInstanceType
	}
	if r.ZoneID != nil {
		s.ZoneID = *r.ZoneID
		if s.ZoneID <= 0 {
			bad("zone_id", "must be a positive integer")
		}
	}
	switch {
	case r.SubnetID == nil:
		bad("subnet_id", "is required")
	case *r.SubnetID <= 0:
		bad("subnet_id", "must be a positive integer")
	default:
		s.SubnetID = *r.SubnetID
	}
	if len(r.SecurityGroupIDs) > MaxSecurityGroups {
		bad("security_group_ids", fmt.Sprintf("must hold at most %d ids", MaxSecurityGroups))
	}
	seen := map[int64]bool{}
	for i, id := range r.SecurityGroupIDs {
		switch {
		case id <= 0:
			bad(fmt.Sprintf("security_group_ids[%d]", i), "must be a positive integer")
		case seen[id]:
			bad(fmt.Sprintf("security_group_ids[%d]", i), "is a duplicate")
		}
		seen[id] = true
	}
	s.SecurityGroupIDs = append([]int64{}, r.SecurityGroupIDs...)
	if r.AllocatePublicIPv4 != nil {
		s.AllocatePublicIPv4 = *r.AllocatePublicIPv4
	}
	if r.SSHPubkey != nil {
		s.SSHPubkey = strings.TrimSpace(*r.SSHPubkey)
		if len(s.SSHPubkey) > MaxSSHPubkeyBytes || strings.ContainsAny(s.SSHPubkey, "\r\n") || !looksLikeSSHKey(s.SSHPubkey) {
			bad("ssh_pubkey", "must be one OpenSSH public key line (ssh-ed25519, ssh-rsa or ecdsa-sha2-*)")
		}
	}
	if r.RootVolumeSizeGiB != nil {
		s.RootVolumeSizeGiB = *r.RootVolumeSizeGiB
		if s.RootVolumeSizeGiB < MinRootVolumeGiB || s.RootVolumeSizeGiB > MaxRootVolumeGiB {
			bad("root_volume_size_gib", fmt.Sprintf("must be %d to %d", MinRootVolumeGiB, MaxRootVolumeGiB))
		}
	}
	alg := ""
	if r.KeyAlgorithm != nil {
		alg = *r.KeyAlgorithm
	}
	var err error
	if s.KeyAlgorithm, err = pki.ParseAlgorithm(alg); err != nil {
		bad("key_algorithm", err.Error())
	}
	if len(errs) > 0 {
		return Spec{}, apperr.Wrap(apperr.Invalid, "invalid_request", joinMessages(errs), errors.Join(errs...))
	}
	return s, nil
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
func (s Spec) Fingerprint() string {
	b, _ := json.Marshal(s) // a struct of plain fields cannot fail to marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
