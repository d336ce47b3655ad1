package cluster

import (
	"context"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Catalog serves GET /catalog: the compute API's images, instance types
// and subnets, asked for with the operator's own token (so the lists are
// what the operator may use). The CLI has no compute API address and
// holds only k8sapi's token, hence this route rather than a call of its
// own.
func (s *Service) Catalog(ctx context.Context, _ auth.Principal, bearer string) (apitypes.Catalog, error) {
	c, err := s.Compute.Catalog(platformauth.WithToken(ctx, bearer))
	if err != nil {
		return apitypes.Catalog{}, usecase.ComputeError("reading the compute catalog", err)
	}
	out := apitypes.Catalog{Images: []apitypes.CatalogImage{}, InstanceTypes: []apitypes.CatalogInstanceType{}, Subnets: []apitypes.CatalogSubnet{}}
	for _, i := range c.Images {
		out.Images = append(out.Images, apitypes.CatalogImage(i))
	}
	for _, t := range c.InstanceTypes {
		out.InstanceTypes = append(out.InstanceTypes, apitypes.CatalogInstanceType(t))
	}
	for _, sn := range c.Subnets {
		out.Subnets = append(out.Subnets, apitypes.CatalogSubnet(sn))
	}
	return out, nil
}
