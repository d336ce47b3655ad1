// Package templates holds the bundle's template files, embedded so every
// Lambda binary carries them and parses them once at cold start
// (internal/bundle.NewRenderer). The files are named after what they render.
package templates

import "embed"

// FS is every template of the bundle: what a node fetches. The userdata
// shim, which a founding hands out (Founding), is not one of them, so the
// bundle function does not carry it.
//
//go:embed exk8s-*.sh *.yaml *.env *.service *.timer *.conf *.conflist *.sha256 kubeconfig
var FS embed.FS

// Founding is what a founding hands out before any bundle exists: the VM
// userdata shim (with the progress library it renders in) and the admin
// kubeconfig. The functions that only found clusters embed these alone
// (bundle.NewFoundingRenderer), not the 70-odd KB of node templates.
//
//go:embed bootstrap-userdata.sh exk8s-progress.sh kubeconfig
var Founding embed.FS
