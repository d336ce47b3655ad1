package compute

// The one table of compute API request paths, relative to the base URL.
// Placeholders are {name}: the client fills them with platformhttp.Path and
// the simulator uses the same strings as net/http ServeMux patterns.
//
// Methods are REST-conventional: GET reads, POST creates (answering
// {"id": N}), DELETE deletes (2xx, or 404 when already gone).
const (
	PathSubnets            = "/v1/subnets"               // GET: {"subnets": [...]}
	PathSubnet             = "/v1/subnets/{id}"          // GET
	PathImages             = "/v1/images"                // GET: {"images": [...]}
	PathInstanceTypes      = "/v1/instance-types"        // GET: {"instance_types": [...]}
	PathImage              = "/v1/images/{id}"           // GET
	PathInstanceType       = "/v1/instance-types/{name}" // GET
	PathSecurityGroups     = "/v1/security-groups"       // POST
	PathSecurityGroup      = "/v1/security-groups/{id}"  // DELETE
	PathSecurityGroupRules = "/v1/security-group-rules"  // POST
	PathInstances          = "/v1/instances"             // POST
	PathInstance           = "/v1/instances/{id}"        // GET, DELETE
)
