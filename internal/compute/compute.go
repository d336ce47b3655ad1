package compute

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/platformhttp"
)

// Client is what the founding use case needs from the compute API.
type Client interface {
	Subnet(ctx context.Context, id int64) (Subnet, error)
	Image(ctx context.Context, id int64) (Image, error)
	InstanceType(ctx context.Context, name string) (InstanceType, error)
	CreateSecurityGroup(ctx context.Context, sg SecurityGroup) (int64, error)
	CreateSecurityGroupRule(ctx context.Context, r Rule) (int64, error)
	DeleteSecurityGroup(ctx context.Context, id int64) error
	CreateInstance(ctx context.Context, in Instance) (int64, error)
	GetInstance(ctx context.Context, id int64) (InstanceInfo, error)
	DeleteInstance(ctx context.Context, id int64) error
	// Catalog is what the caller may found on: the images, instance
	// types and subnets.
	Catalog(ctx context.Context) (Catalog, error)
}

// Catalog is the compute API's lists of what VMs are made of.
type Catalog struct {
	Images        []Image        `json:"images"`
	InstanceTypes []InstanceType `json:"instance_types"`
	Subnets       []Subnet       `json:"subnets"`
}

// Subnet is a subnet and its address ranges. CIDRv6 is "" when the subnet
// has no IPv6 range.
type Subnet struct {
	ID     int64  `json:"id"`
	ZoneID int64  `json:"zone_id"`
	CIDRv4 string `json:"cidr_ipv4"`
	CIDRv6 string `json:"cidr_ipv6"`
}

// Image is a VM image a control plane may boot.
type Image struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// InstanceType is a VM size.
type InstanceType struct {
	Name      string `json:"name"`
	VCPUs     int    `json:"vcpus"`
	MemoryMiB int    `json:"memory_mib"`
}

// SecurityGroup is a security group to create.
type SecurityGroup struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// IdempotencyToken, sent as the Idempotency-Key header: a repeat with
	// the same token answers the group the first create made.
	IdempotencyToken string `json:"-"`
}

// Protocol and port-range values of a Rule, as the Terraform provider spells them.
const (
	ProtocolTCPv4 = "TCPv4"
	ProtocolAny   = "ANY"
	PortRangeAny  = "ANY"
)

// Rule is one security group rule. PortRange is a port ("6443"), a range
// ("30000-32767") or PortRangeAny.
type Rule struct {
	SecurityGroupID int64  `json:"security_group_id"`
	IsIngress       bool   `json:"is_ingress"`
	Protocol        string `json:"protocol"`
	PortRange       string `json:"port_range"`
	CIDR            string `json:"cidr"`
	Description     string `json:"description"`
	// IdempotencyToken: see SecurityGroup.
	IdempotencyToken string `json:"-"`
}

// Instance is a VM to create. Tags["role"] names the VM's role (the platform
// records it); Userdata is run by the VM at first boot.
type Instance struct {
	Name               string
	ZoneID             int64
	SubnetID           int64
	ImageID            int64
	InstanceType       string
	AllocatePublicIPv4 bool
	SSHPubkey          string
	SecurityGroupIDs   []int64
	RootVolumeSizeGiB  int
	Tags               map[string]string
	Userdata           string
	// IdempotencyToken: a repeat with the same token answers the VM the
	// first create made (even if its answer was lost), never a second VM.
	IdempotencyToken string
}

// InstanceInfo is a VM as the platform reports it. Addresses are "" when
// the VM has none of that kind.
type InstanceInfo struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	State      string `json:"state"`
	IPv4       string `json:"ipv4"`
	IPv6       string `json:"ipv6"`
	PublicIPv4 string `json:"public_ipv4"`
}

// InstanceRequest is the wire form of Instance (the Terraform provider's
// nesting of root_volume.size_gib). Exported for the simulator, which
// decodes exactly what the client sends.
type InstanceRequest struct {
	Name               string            `json:"name"`
	ZoneID             int64             `json:"zone_id"`
	SubnetID           int64             `json:"subnet_id"`
	ImageID            int64             `json:"image_id"`
	InstanceType       string            `json:"instance_type"`
	AllocatePublicIPv4 bool              `json:"allocate_public_ipv4"`
	SSHPubkey          string            `json:"ssh_pubkey,omitempty"`
	SecurityGroupIDs   []int64           `json:"security_group_ids"`
	RootVolume         *RootVolume       `json:"root_volume,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	Userdata           string            `json:"userdata,omitempty"`
}

// RootVolume is the root_volume block of an instance.
type RootVolume struct {
	SizeGiB int `json:"size_gib"`
}

// Created is the answer to every create: the new object's id.
type Created struct {
	ID int64 `json:"id"`
}

// APIError is the platform's non-2xx answer (see platformhttp).
type APIError = platformhttp.APIError

// IsNotFound reports whether err is the platform's 404.
func IsNotFound(err error) bool { return platformhttp.IsNotFound(err) }

// HTTPClient is the Client over HTTP.
type HTTPClient struct {
	c *platformhttp.Client
}

var _ Client = (*HTTPClient)(nil)

// NewHTTP returns a client of the compute API at baseURL. A nil httpClient
// gets one with platformhttp.DefaultTimeout.
func NewHTTP(baseURL string, httpClient *http.Client) *HTTPClient {
	return &HTTPClient{c: platformhttp.New("compute", baseURL, httpClient)}
}

func idPath(pattern string, id int64) string {
	return platformhttp.Path(pattern, "id", strconv.FormatInt(id, 10))
}

// Subnet returns the subnet id.
func (h *HTTPClient) Subnet(ctx context.Context, id int64) (Subnet, error) {
	var s Subnet
	if err := h.c.Do(ctx, http.MethodGet, idPath(PathSubnet, id), nil, &s); err != nil {
		return Subnet{}, fmt.Errorf("reading subnet %d: %w", id, err)
	}
	return s, nil
}

// Image returns image id.
func (h *HTTPClient) Image(ctx context.Context, id int64) (Image, error) {
	var img Image
	if err := h.c.Do(ctx, http.MethodGet, idPath(PathImage, id), nil, &img); err != nil {
		return Image{}, fmt.Errorf("reading image %d: %w", id, err)
	}
	return img, nil
}

// InstanceType returns the instance type named name.
func (h *HTTPClient) InstanceType(ctx context.Context, name string) (InstanceType, error) {
	var t InstanceType
	if err := h.c.Do(ctx, http.MethodGet, platformhttp.Path(PathInstanceType, "name", name), nil, &t); err != nil {
		return InstanceType{}, fmt.Errorf("reading instance type %q: %w", name, err)
	}
	return t, nil
}

// Catalog reads the three lists, one call each: each answer is an
// object holding one of Catalog's keys, decoded into the same value.
func (h *HTTPClient) Catalog(ctx context.Context) (Catalog, error) {
	var c Catalog
	for _, path := range []string{PathImages, PathInstanceTypes, PathSubnets} {
		if err := h.c.Do(ctx, http.MethodGet, path, nil, &c); err != nil {
			return Catalog{}, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return c, nil
}

// CreateSecurityGroup creates sg and returns its id.
func (h *HTTPClient) CreateSecurityGroup(ctx context.Context, sg SecurityGroup) (int64, error) {
	return h.create(ctx, PathSecurityGroups, sg.IdempotencyToken, sg, "security group "+strconv.Quote(sg.Name))
}

// CreateSecurityGroupRule adds r to its security group and returns the rule's id.
func (h *HTTPClient) CreateSecurityGroupRule(ctx context.Context, r Rule) (int64, error) {
	what := fmt.Sprintf("rule %s %s from %s in security group %d", r.Protocol, r.PortRange, r.CIDR, r.SecurityGroupID)
	return h.create(ctx, PathSecurityGroupRules, r.IdempotencyToken, r, what)
}

// DeleteSecurityGroup deletes security group id; one already gone is success.
func (h *HTTPClient) DeleteSecurityGroup(ctx context.Context, id int64) error {
	return h.delete(ctx, idPath(PathSecurityGroup, id), fmt.Sprintf("security group %d", id))
}

// CreateInstance creates a VM and returns its id. The VM's addresses are
// read back with GetInstance.
func (h *HTTPClient) CreateInstance(ctx context.Context, in Instance) (int64, error) {
	req := InstanceRequest{
		Name:               in.Name,
		ZoneID:             in.ZoneID,
		SubnetID:           in.SubnetID,
		ImageID:            in.ImageID,
		InstanceType:       in.InstanceType,
		AllocatePublicIPv4: in.AllocatePublicIPv4,
		SSHPubkey:          in.SSHPubkey,
		SecurityGroupIDs:   in.SecurityGroupIDs,
		Tags:               in.Tags,
		Userdata:           in.Userdata,
	}
	if req.SecurityGroupIDs == nil {
		req.SecurityGroupIDs = []int64{} // the API reads null as "field missing"
	}
	if in.RootVolumeSizeGiB > 0 { // 0: the image's default size
		req.RootVolume = &RootVolume{SizeGiB: in.RootVolumeSizeGiB}
	}
	return h.create(ctx, PathInstances, in.IdempotencyToken, req, "instance "+strconv.Quote(in.Name))
}

// GetInstance reads VM id back: name, state and addresses.
func (h *HTTPClient) GetInstance(ctx context.Context, id int64) (InstanceInfo, error) {
	var info InstanceInfo
	if err := h.c.Do(ctx, http.MethodGet, idPath(PathInstance, id), nil, &info); err != nil {
		return InstanceInfo{}, fmt.Errorf("reading instance %d: %w", id, err)
	}
	return info, nil
}

// DeleteInstance deletes VM id; one already gone is success, so
// compensation may be retried.
func (h *HTTPClient) DeleteInstance(ctx context.Context, id int64) error {
	return h.delete(ctx, idPath(PathInstance, id), fmt.Sprintf("instance %d", id))
}

func (h *HTTPClient) create(ctx context.Context, path, token string, body any, what string) (int64, error) {
	var out Created
	if err := h.c.Create(ctx, path, token, body, &out); err != nil {
		return 0, fmt.Errorf("creating %s: %w", what, err)
	}
	if out.ID <= 0 {
		return 0, fmt.Errorf("creating %s: compute API answered without an id", what)
	}
	return out.ID, nil
}

func (h *HTTPClient) delete(ctx context.Context, path, what string) error {
	err := h.c.Do(ctx, http.MethodDelete, path, nil, nil)
	if err == nil || IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("deleting %s: %w", what, err)
}
