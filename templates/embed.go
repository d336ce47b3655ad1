// Package templates holds the bundle's template files, embedded so every
// Lambda binary carries them and parses them once at cold start
// (internal/bundle.NewRenderer). The files are named after what they render.
package templates

import "embed"

// FS is every template of the bundle.
//
//go:embed *.sh *.yaml *.env *.service *.timer *.conflist *.sha256 kubeconfig
var FS embed.FS
