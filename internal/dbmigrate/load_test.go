package dbmigrate

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/jackc/tern/v2/migrate"
)

// loadPlain reads every set exactly as tern's own LoadMigrations does:
// same names, order and SQL, so skipping the template step changes nothing
// that is applied.
func TestLoadPlainMatchesTern(t *testing.T) {
	for _, s := range sets {
		t.Run(s.versionTable, func(t *testing.T) {
			want, got := loaded(t, (*migrate.Migrator).LoadMigrations, s), loaded(t, loadPlain, s)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d migrations, tern loads %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Sequence != w.Sequence || g.Name != w.Name || g.UpSQL != w.UpSQL || g.DownSQL != w.DownSQL {
					t.Errorf("migration %d: %s, tern loads %s", i+1, g.Name, w.Name)
				}
			}
		})
	}
}

func loaded(t *testing.T, load func(*migrate.Migrator, fs.FS) error, s set) []*migrate.Migration {
	t.Helper()
	m, err := migrate.NewMigrator(context.Background(), nil, s.versionTable) // no conn: loading only
	if err != nil {
		t.Fatal(err)
	}
	if err := load(m, s.files()); err != nil {
		t.Fatal(err)
	}
	return m.Migrations
}

// A file with template markup is refused by name, never applied raw.
func TestLoadPlainRefusesTemplates(t *testing.T) {
	files := fstest.MapFS{
		"001_a.sql": {Data: []byte("CREATE TABLE a (id int);\n---- create above / drop below ----\nDROP TABLE a;")},
		"002_b.sql": {Data: []byte("CREATE TABLE {{ .name }} (id int);")},
	}
	m, _ := migrate.NewMigrator(context.Background(), nil, "v")
	err := loadPlain(m, files)
	if !errors.Is(err, errTemplated) || len(m.Migrations) != 1 {
		t.Fatalf("err %v, %d loaded", err, len(m.Migrations))
	}
}
