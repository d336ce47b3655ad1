package apperr

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/excloud/k8sapi/internal/apperr"

// moduleRoot is where the guard starts: the module this package is in.
const moduleRoot = "../.."

// notScanned are the directories whose strings are not k8sapi's codes:
// apperr defines them, and the simulator answers as the platform's own
// APIs do, in their codes.
var notScanned = []string{"internal/apperr", "internal/simulator"}

// storedValues are strings that equal a code but are not one: values a
// table holds, which must not change when a code does. Keyed by file and
// string.
var storedValues = map[string]bool{
	"internal/store/bootstrap.go bootstrap_closed": true, // bootstrap_fetches.outcome
}

// usage is what the guard learns of one file: the literal codes it spells
// and the catalogue entries it names.
type usage struct {
	literals []literal
	named    map[string]bool
}

// literal is one string of a file the guard refuses.
type literal struct {
	line       int
	value, why string
}

func (l literal) String() string { return fmt.Sprintf("%d: %q %s", l.line, l.value, l.why) }

// Product code never spells a code: a string equal to a catalogue code, or
// a code-shaped string passed to apperr, fails; and every entry of the
// catalogue is answered by some product code.
func TestNoLiteralCodes(t *testing.T) {
	named := map[string]bool{}
	for _, path := range productFiles(t) {
		u := scan(t, path, readFile(t, path))
		rel, _ := filepath.Rel(moduleRoot, path)
		for _, l := range u.literals {
			if !storedValues[filepath.ToSlash(rel)+" "+l.value] {
				t.Errorf("%s:%s (name it from the catalogue: apperr.<Code>)", rel, l)
			}
		}
		for n := range u.named {
			named[n] = true
		}
	}
	for name, code := range catalogueVars(t) {
		if !named[name] {
			t.Errorf("apperr.%s (%q) is answered nowhere: drop it from the catalogue", name, code)
		}
	}
}

// The guard fails where it must: a code spelled for the local gateway, a
// made-up code passed to apperr, a code in a variable; and names what it
// finds.
func TestTheGuardCatchesLiteralCodes(t *testing.T) {
	src := `package x
import errs "github.com/excloud/k8sapi/internal/apperr"
var rateLimited = "rate_limited"
func f() {
	writeGatewayError(w, 502, "bad_gateway", "the function failed")
	_ = errs.Internal.Detail("made_up_code")
	_ = errs.Conflict.Detail("the cluster is being deleted; poll GET /clusters/{id}")
}`
	u := scan(t, "x.go", []byte(src))
	want := []literal{
		{3, "rate_limited", "is a catalogue code"},
		{5, "bad_gateway", "is a catalogue code"},
		{6, "made_up_code", "is passed to apperr as a code"},
	}
	if !slices.Equal(u.literals, want) {
		t.Errorf("found %v\nwant  %v", u.literals, want)
	}
	if !u.named["Internal"] || !u.named["Conflict"] || len(u.named) != 2 {
		t.Errorf("named %v", u.named)
	}
}

// productFiles is every non-test Go file of the module, outside notScanned
// and outside nested modules (e2e, bench).
func productFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(path)
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func skipDir(path string) error {
	rel, _ := filepath.Rel(moduleRoot, path)
	if rel == "." {
		return nil
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	if err == nil || strings.HasPrefix(filepath.Base(path), ".") || filepath.Base(path) == "testdata" ||
		slices.Contains(notScanned, filepath.ToSlash(rel)) {
		return filepath.SkipDir
	}
	return nil
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scan parses one file and finds its literal codes and the catalogue
// entries it names.
func scan(t *testing.T, path string, src []byte) usage {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	u := usage{named: map[string]bool{}}
	local := localName(f)
	report := func(n ast.Node, value, why string) {
		u.literals = append(u.literals, literal{fset.Position(n.Pos()).Line, value, why})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, ok := stringOf(n); ok && isCatalogued(s) {
				report(n, s, "is a catalogue code")
			}
		case *ast.CallExpr:
			if local != "" && rootOf(n.Fun) == local {
				checkArgs(n, report)
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && local != "" && id.Name == local {
				u.named[n.Sel.Name] = true
			}
		}
		return true
	})
	return u
}

// checkArgs reports a code-shaped string passed to apperr that is not in
// the catalogue (catalogued ones are reported as literals already).
func checkArgs(call *ast.CallExpr, report func(n ast.Node, value, why string)) {
	for _, a := range call.Args {
		lit, ok := a.(*ast.BasicLit)
		if s, isString := stringOf(lit); ok && isString && codeShape.MatchString(s) && !isCatalogued(s) {
			report(lit, s, "is passed to apperr as a code")
		}
	}
}

// localName is what the file calls apperr; "" if it does not import it.
func localName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "apperr"
		}
	}
	return ""
}

// rootOf is the identifier a call's function hangs from: apperr in
// apperr.X(...) and in apperr.X.Detail(...).
func rootOf(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name
		case *ast.SelectorExpr:
			e = x.X
		case *ast.CallExpr:
			e = x.Fun
		default:
			return ""
		}
	}
}

func stringOf(lit *ast.BasicLit) (string, bool) {
	if lit == nil || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func isCatalogued(s string) bool {
	return slices.ContainsFunc(Catalogue(), func(c Code) bool { return c.String() == s })
}

// catalogueVars maps each exported variable of catalogue.go that a define
// call makes to its code.
func catalogueVars(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "catalogue.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok && len(spec.Values) == 1 {
			if call, ok := spec.Values[0].(*ast.CallExpr); ok && strings.HasPrefix(rootOf(call.Fun), "define") {
				code, _ := stringOf(call.Args[0].(*ast.BasicLit))
				vars[spec.Names[0].Name] = code
			}
		}
		return true
	})
	if len(vars) != len(Catalogue()) {
		t.Fatalf("catalogue.go defines %d codes by name, the catalogue holds %d", len(vars), len(Catalogue()))
	}
	return vars
}
