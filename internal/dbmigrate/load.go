package dbmigrate

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/tern/v2/migrate"
)

// upDownSeparator splits a tern migration file into its up and down SQL.
const upDownSeparator = "---- create above / drop below ----"

// errTemplated: k8sapi's migrations are plain SQL (see loadPlain).
var errTemplated = errors.New("holds template markup ({{), which k8sapi's migrations do not use")

// loadPlain adds fsys's migrations to m as tern's LoadMigrations would,
// without its template step: the files are plain SQL, applied as written.
// Why: LoadMigrations evaluates each file as a text/template with sprig's
// functions, and linking that executor keeps every exported method of every
// type the binary holds in an interface: 800 KB more of MigrateFunction,
// which is held to the 12 MiB every function is. tern still finds the files
// (numbering, gaps), takes the lock, keeps the version table and runs each
// migration in its transaction.
func loadPlain(m *migrate.Migrator, fsys fs.FS) error {
	paths, err := migrate.FindMigrations(fsys)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return migrate.NoMigrationsFoundError{}
	}
	for _, p := range paths {
		if err := appendFile(m, fsys, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// appendFile adds one migration file, split into its up and down SQL.
func appendFile(m *migrate.Migrator, fsys fs.FS, path string) error {
	body, err := fs.ReadFile(fsys, path)
	if err != nil {
		return err
	}
	if strings.Contains(string(body), "{{") {
		return errTemplated
	}
	up, down, _ := strings.Cut(string(body), upDownSeparator)
	m.AppendMigration(path, strings.TrimSpace(up), strings.TrimSpace(down))
	return nil
}
