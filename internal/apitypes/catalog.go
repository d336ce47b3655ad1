package apitypes

// Catalog is GET /catalog: what the operator's clusters and pools may be
// made of, as the compute API lists it for the operator's token (the ids
// and names a cluster file and POST /clusters take).
type Catalog struct {
	Images        []CatalogImage        `json:"images"`
	InstanceTypes []CatalogInstanceType `json:"instance_types"`
	Subnets       []CatalogSubnet       `json:"subnets"`
}

// CatalogImage is a VM image.
type CatalogImage struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// CatalogInstanceType is a VM size.
type CatalogInstanceType struct {
	Name      string `json:"name"`
	VCPUs     int    `json:"vcpus"`
	MemoryMiB int    `json:"memory_mib"`
}

// CatalogSubnet is a subnet and its address ranges (CIDRv6 "" when it
// has no IPv6 range).
type CatalogSubnet struct {
	ID     int64  `json:"id"`
	ZoneID int64  `json:"zone_id"`
	CIDRv4 string `json:"cidr_ipv4"`
	CIDRv6 string `json:"cidr_ipv6"`
}
