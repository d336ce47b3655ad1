// Package apidocs holds k8sapi's API description: one OpenAPI 3.1 document
// (openapi.json, the contract that tests hold to the code) and a
// self-contained HTML page rendering it. The page's renderer, style and the
// document itself are embedded in the page, so it fetches nothing, and its
// Content-Security-Policy forbids fetching anything.
package apidocs

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"
)

// OpenAPI is the OpenAPI 3.1 document of every route (GET /openapi.json).
//
//go:embed openapi.json
var OpenAPI []byte

//go:embed docs.html
var pageTemplate string

//go:embed docs.js
var script string

//go:embed docs.css
var style string

var page, csp = build()

// Document serves the description to the API's handlers (api.Docs).
type Document struct{}

// OpenAPI is the document.
func (Document) OpenAPI() []byte { return OpenAPI }

// Page is the HTML of GET /docs.
func (Document) Page() []byte { return page }

// CSP is the page's Content-Security-Policy.
func (Document) CSP() string { return csp }

// Page is the HTML of GET /docs.
func Page() []byte { return page }

// CSP is the Content-Security-Policy of the page: its one inline script and
// style, nothing else (no connections, no images, no frames).
func CSP() string { return csp }

func build() ([]byte, string) {
	// "<" only occurs inside JSON strings, where \u003c means the same; the
	// document cannot then close its <script> element.
	doc := bytes.ReplaceAll(OpenAPI, []byte("<"), []byte(`\u003c`))
	html := strings.NewReplacer(
		"{{STYLE}}", style,
		"{{SCRIPT}}", script,
		"{{OPENAPI}}", string(doc),
	).Replace(pageTemplate)
	policy := "default-src 'none'; script-src '" + hash(script) + "'; style-src '" + hash(style) +
		"'; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return []byte(html), policy
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
