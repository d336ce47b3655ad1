package stacktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/simulator"
)

// ThreeNodes is the body of POST /clusters for a three-node control plane.
const ThreeNodes = `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3}`

// OneNode is the body of POST /clusters for a one-node control plane.
const OneNode = `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`

// TwoWorkers is the body of POST /clusters/{id}/node-pools for a pool
// "workers" of two, labelled and tainted.
const TwoWorkers = `{"name":"workers","count":2,"instance_type":"e2.medium","image_id":1,` +
	`"labels":{"tier":"web"},"taints":[{"key":"dedicated","value":"web","effect":"NoSchedule"}]}`

// PoolsURL is the node-pools collection of cluster id; with a name, one pool.
func (c *Client) PoolsURL(id int64, name ...string) string {
	u := c.APIURL + "/clusters/" + strconv.FormatInt(id, 10) + "/node-pools"
	for _, n := range name {
		u += "/" + n
	}
	return u
}

// AddPool creates a pool of cluster id as org's operator, failing the
// test on any answer but 201, and returns the pool.
func (c *Client) AddPool(org, id int64, body string) apitypes.NodePool {
	c.T.Helper()
	r := Do(c.T, http.MethodPost, c.PoolsURL(id), body, c.Bearer(org))
	if r.Status != http.StatusCreated {
		c.T.Fatalf("POST node-pools = %d %s", r.Status, r.Body)
	}
	var p apitypes.NodePool
	r.JSON(c.T, &p)
	return p
}

// Response is one HTTP answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it does not decode.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// ErrorCode returns the JSON error's code, failing the test if the body is
// not the error shape.
func (r Response) ErrorCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	r.JSON(t, &e)
	if e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error: %s", r.Body)
	}
	return e.Error.Code
}

// Do sends one request and reads the answer. Every answer of a documented
// route must hold to the OpenAPI document, and no answer but a bundle or a
// founding (whose admin kubeconfig carries a key) may carry key material.
func Do(t testing.TB, method, url, body string, headers map[string]string) Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if bytes.Contains(b, []byte("PRIVATE KEY")) && !strings.Contains(url, "/bootstrap/") && method != http.MethodPost {
		t.Fatalf("%s %s leaked key material", method, url)
	}
	if _, err := apidocstest.Check(method, url, resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("contract: %v", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Client drives a running stack as its users do: an operator with a
// principal token of an org, a VM through the simulator's IMDS.
type Client struct {
	T      testing.TB
	APIURL string        // k8sapi
	SimURL string        // the simulator: IMDS at /imds/{vm_id}
	Pool   *pgxpool.Pool // holds the platform tables principal tokens live in
	tokens map[int64]string
}

// Token returns a live principal token of org, issued once.
func (c *Client) Token(org int64) string {
	c.T.Helper()
	if tok, ok := c.tokens[org]; ok {
		return tok
	}
	tok, err := simulator.IssuePrincipalToken(context.Background(), c.Pool, org, auth.PrincipalScope, time.Hour)
	if err != nil {
		c.T.Fatal(err)
	}
	if c.tokens == nil {
		c.tokens = map[int64]string{}
	}
	c.tokens[org] = tok
	return tok
}

// Bearer is the Authorization header of org's operator.
func (c *Client) Bearer(org int64) map[string]string {
	return map[string]string{"Authorization": "Bearer " + c.Token(org)}
}

// Create asks for a cluster as org's operator.
func (c *Client) Create(org int64, body string) Response {
	return Do(c.T, http.MethodPost, c.APIURL+"/clusters", body, c.Bearer(org))
}

// Found founds a cluster for org and returns the 201 body, failing the test
// on any other answer.
func (c *Client) Found(org int64, body string) apitypes.FoundingResult {
	c.T.Helper()
	r := c.Create(org, body)
	if r.Status != http.StatusCreated {
		c.T.Fatalf("POST /clusters = %d %s", r.Status, r.Body)
	}
	var res apitypes.FoundingResult
	r.JSON(c.T, &res)
	return res
}

// VMCredentials walks the simulator's IMDS like the userdata shim: a
// session token, then an access token.
func (c *Client) VMCredentials(vmID int64) (imdsToken, accessToken string) {
	c.T.Helper()
	base := c.SimURL + "/imds/" + strconv.FormatInt(vmID, 10)
	r := Do(c.T, http.MethodGet, base+"/token", "", nil)
	if r.Status != http.StatusOK {
		c.T.Fatalf("IMDS token for vm %d: %d %s", vmID, r.Status, r.Body)
	}
	imdsToken = strings.TrimSpace(string(r.Body))
	r = Do(c.T, http.MethodGet, base+"/latest/identity/access-token", "", map[string]string{"X-exc-imds-token": imdsToken})
	var at struct {
		AccessToken string `json:"access_token"`
	}
	r.JSON(c.T, &at)
	if at.AccessToken == "" {
		c.T.Fatalf("IMDS access token for vm %d: %s", vmID, r.Body)
	}
	return imdsToken, at.AccessToken
}

// VMCall calls the VM route at pathTemplate for vmID with a VM's
// credentials (the four proofs' headers).
func (c *Client) VMCall(method, pathTemplate string, vmID int64, imdsToken, accessToken, body string) Response {
	c.T.Helper()
	path := strings.Replace(pathTemplate, "{vm_id}", strconv.FormatInt(vmID, 10), 1)
	return Do(c.T, method, c.APIURL+path, body, map[string]string{
		"X-exc-imds-token": imdsToken, "Authorization": "Bearer " + accessToken,
	})
}

// FetchBundle fetches vmID's bundle with the VM's credentials.
func (c *Client) FetchBundle(vmID int64, imdsToken, accessToken string) Response {
	c.T.Helper()
	return c.VMCall(http.MethodGet, bundle.PathTemplate, vmID, imdsToken, accessToken, "")
}

// Renew asks for vmID's certificate renewal with the VM's credentials.
func (c *Client) Renew(vmID int64, imdsToken, accessToken, body string) Response {
	c.T.Helper()
	return c.VMCall(http.MethodPost, bundle.RenewPathTemplate, vmID, imdsToken, accessToken, body)
}

// RenewalRequest is the body a node with the bundle files sends to renew:
// one certificate request per renewable identity, signed with the key file
// the bundle wrote for it, as exk8s-renew-certificates.sh makes them.
func RenewalRequest(t testing.TB, files map[string]string) string {
	t.Helper()
	csrs := map[pki.Name]string{}
	for _, name := range pki.Renewable() {
		csrs[name] = SignedCSR(t, files[bundle.KeyPath(name)])
	}
	body, err := json.Marshal(map[string]any{"csrs": csrs})
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// SignedCSR is a PEM certificate request signed with the PEM key keyPEM.
func SignedCSR(t testing.TB, keyPEM string) string {
	t.Helper()
	key, err := pki.ParseKey([]byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "renewal"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
