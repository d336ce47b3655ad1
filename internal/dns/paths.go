package dns

// The one table of DNS API request paths, relative to the base URL.
// Placeholders are {name}: the client fills them with platformhttp.Path and
// the simulator uses the same strings as net/http ServeMux patterns.
const (
	PathRecords = "/v1/zones/{zone}/records"               // GET: {"records": [...]}
	PathRecord  = "/v1/zones/{zone}/records/{type}/{name}" // PUT (upsert), DELETE
)
