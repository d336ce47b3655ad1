package dns

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/excloud/k8sapi/internal/platformhttp"
)

// Client is what k8sapi needs from the DNS API.
type Client interface {
	// UpsertA makes name in zone resolve to ipv4 (creating or replacing
	// the record).
	UpsertA(ctx context.Context, zone, name, ipv4 string, ttl int) error
	// DeleteA removes the A record of name in zone; one already gone is
	// success.
	DeleteA(ctx context.Context, zone, name string) error
}

// TypeA is the record type this client manages.
const TypeA = "A"

// Record is a DNS record in the API's vocabulary.
type Record struct {
	ZoneName string `json:"zone_name"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Value    string `json:"value"`
	TTL      int    `json:"ttl"`
}

// RecordList is the answer of GET PathRecords.
type RecordList struct {
	Records []Record `json:"records"`
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

// NewHTTP returns a client of the DNS API at baseURL. A nil httpClient gets
// one with platformhttp.DefaultTimeout.
func NewHTTP(baseURL string, httpClient *http.Client) *HTTPClient {
	return &HTTPClient{c: platformhttp.New("dns", baseURL, httpClient)}
}

func recordPath(zone, typ, name string) string {
	return platformhttp.Path(PathRecord, "zone", zone, "type", typ, "name", name)
}

// UpsertA creates or replaces the A record name.zone → ipv4.
func (h *HTTPClient) UpsertA(ctx context.Context, zone, name, ipv4 string, ttl int) error {
	// Checked here because a bad value would otherwise become a platform
	// 400 with less context, or worse, a record that resolves to nothing.
	if a, err := netip.ParseAddr(ipv4); err != nil || !a.Is4() {
		return fmt.Errorf("upserting A %s in zone %s: %q is not an IPv4 address", name, zone, ipv4)
	}
	if zone == "" || name == "" || ttl <= 0 {
		return fmt.Errorf("upserting A %q in zone %q: zone, name and a positive ttl are required", name, zone)
	}
	rec := Record{ZoneName: zone, Name: name, Type: TypeA, Value: ipv4, TTL: ttl}
	if err := h.c.Do(ctx, http.MethodPut, recordPath(zone, TypeA, name), rec, nil); err != nil {
		return fmt.Errorf("upserting A %s in zone %s: %w", name, zone, err)
	}
	return nil
}

// DeleteA deletes the A record name.zone; one already gone is success.
func (h *HTTPClient) DeleteA(ctx context.Context, zone, name string) error {
	err := h.c.Do(ctx, http.MethodDelete, recordPath(zone, TypeA, name), nil, nil)
	if err == nil || IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("deleting A %s in zone %s: %w", name, zone, err)
}

// Records lists the records of zone. Not part of Client: k8sapi never needs
// it; tests and tools do.
func (h *HTTPClient) Records(ctx context.Context, zone string) ([]Record, error) {
	var out RecordList
	if err := h.c.Do(ctx, http.MethodGet, platformhttp.Path(PathRecords, "zone", zone), nil, &out); err != nil {
		return nil, fmt.Errorf("listing records of zone %s: %w", zone, err)
	}
	return out.Records, nil
}
