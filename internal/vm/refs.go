package vm

import (
	"context"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Subnet looks the subnet up; an unknown one is bad input.
func (m Maker) Subnet(ctx context.Context, id int64) (compute.Subnet, error) {
	subnet, err := m.Compute.Subnet(ctx, id)
	return subnet, refError(err, "subnet_id: no such subnet", "looking up the subnet")
}

// Refs are what a request names of the compute API's (a subnet,
// an image, an instance type), with the request's field of each.
type Refs struct {
	SubnetID, ImageID             int64
	InstanceType                  string
	ImageField, InstanceTypeField string
}

// CheckRefs: the subnet, image and instance type a request names
// exist, asked of the compute API, which owns them.
func (m Maker) CheckRefs(ctx context.Context, refs Refs) error {
	if _, err := m.Subnet(ctx, refs.SubnetID); err != nil {
		return err
	}
	_, err := m.Compute.Image(ctx, refs.ImageID)
	if err := refError(err, refs.ImageField+": no such image", "looking up the image"); err != nil {
		return err
	}
	_, err = m.Compute.InstanceType(ctx, refs.InstanceType)
	return refError(err, refs.InstanceTypeField+": no such instance type", "looking up the instance type")
}

// refError is a lookup's failure: the platform's 404 is the client's bad
// input, any other failure the platform's.
func refError(err error, unknown, doing string) error {
	if compute.IsNotFound(err) {
		return apperr.InvalidRequest.Detail(unknown)
	}
	if err != nil {
		return usecase.ComputeError(doing, err)
	}
	return nil
}
