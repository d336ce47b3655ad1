// Package migrations embeds the SQL migrations. K8sapi holds k8sapi's own
// tables (applied everywhere); PlatformDev holds dev-only stand-ins for tables
// other Excloud services own in production, and PlatformDevGrants what those
// services grant k8sapi's function roles on them (both applied only by the
// local stack and tests).
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed k8sapi/*.sql platformdev/*.sql platformdevgrants/*.sql
var files embed.FS

// K8sapi returns k8sapi's own migrations.
func K8sapi() fs.FS { return sub("k8sapi") }

// PlatformDev returns the dev-only platform table migrations.
func PlatformDev() fs.FS { return sub("platformdev") }

// PlatformDevGrants returns the dev-only grants on the platform tables to
// k8sapi's function roles.
func PlatformDevGrants() fs.FS { return sub("platformdevgrants") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time; absence is a build bug
	}
	return f
}
