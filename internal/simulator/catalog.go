package simulator

import (
	"fmt"
	"net/http"

	"github.com/excloud/k8sapi/internal/compute"
)

// images and instanceTypes are the simulator's catalogue: a small stand-in
// for what the real compute API offers, enough for the tests and the local
// stack, not a copy of Excloud's. Only existence is judged: a VM of any
// listed size boots any listed image.
var images = []compute.Image{
	{ID: 1, Name: "ubuntu-24.04"},
	{ID: 2, Name: "debian-12"},
}

var instanceTypes = []compute.InstanceType{
	{Name: "e2.medium", VCPUs: 2, MemoryMiB: 4096},
	{Name: "e2.large", VCPUs: 2, MemoryMiB: 8192},
	{Name: "c1.large", VCPUs: 4, MemoryMiB: 8192},
	{Name: "c1.xlarge", VCPUs: 8, MemoryMiB: 16384},
}

func imageByID(id int64) (compute.Image, bool) {
	for _, img := range images {
		if img.ID == id {
			return img, true
		}
	}
	return compute.Image{}, false
}

func instanceTypeNamed(name string) (compute.InstanceType, bool) {
	for _, t := range instanceTypes {
		if t.Name == name {
			return t, true
		}
	}
	return compute.InstanceType{}, false
}

func (s *Simulator) getImage(w http.ResponseWriter, r *http.Request, _ int64) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	img, ok := imageByID(id)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("image %d not found", id))
		return
	}
	writeJSON(w, http.StatusOK, img)
}

func (s *Simulator) getInstanceType(w http.ResponseWriter, r *http.Request, _ int64) {
	t, ok := instanceTypeNamed(r.PathValue("name"))
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("instance type %q not found", r.PathValue("name")))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// catalogProblem is what the create of a VM says of an image or an
// instance type the catalogue lacks.
func catalogProblem(in compute.InstanceRequest) string {
	if _, ok := imageByID(in.ImageID); !ok {
		return fmt.Sprintf("image_id: image %d not found", in.ImageID)
	}
	if _, ok := instanceTypeNamed(in.InstanceType); !ok {
		return fmt.Sprintf("instance_type: instance type %q not found", in.InstanceType)
	}
	return ""
}

// The catalogue's lists, as the compute API answers them: an object
// whose one key names the list.
func (s *Simulator) listImages(w http.ResponseWriter, _ *http.Request, _ int64) {
	writeJSON(w, http.StatusOK, map[string]any{"images": images})
}

func (s *Simulator) listInstanceTypes(w http.ResponseWriter, _ *http.Request, _ int64) {
	writeJSON(w, http.StatusOK, map[string]any{"instance_types": instanceTypes})
}
