package clusterfacts

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/pki"
)

// CertSubject is what node n's certificates name (pki.Subject): the one
// place founding, bundle fetches and renewals build them. Initial is left
// to the caller, who knows which identities it issues.
func (c Cluster) CertSubject(n Node) (pki.Subject, error) {
	serviceIP, _, err := ServiceIPs(c.ServiceCIDR)
	if err != nil {
		return pki.Subject{}, fmt.Errorf("service IP of cluster %d: %w", c.ID, err)
	}
	return pki.Subject{Name: n.Name, ControlPlaneDNSName: c.ControlPlaneDNSName, ClusterDomain: c.ClusterDomain,
		IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4, ServiceIP: serviceIP}, nil
}
