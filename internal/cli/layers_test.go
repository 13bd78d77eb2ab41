package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyCLIImportsURFave holds the rule docs/architecture.md states: a library takes typed
// options, never a command line, so no package under internal/ but this one imports
// urfave/cli, directly or through another.
func TestOnlyCLIImportsURFave(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/agentfleet/fleet/internal/cli"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "github.com/agentfleet/fleet/internal/") || fields[0] == self {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/urfave/cli") {
				t.Errorf("%s imports %s: only internal/cli may; parse flags in cmd/ and pass typed options", fields[0], imp)
			}
		}
	}
}

// TestNoSetenvInLibraries: a library never passes its settings to itself (or to another)
// through the process environment (os.Setenv), and keeps no package-level function variable
// for another package to set: both hid wiring between tools before. Tests and the tests' own
// environment package are exempt.
func TestNoSetenvInLibraries(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "testenv") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok && len(vs.Values) == 0 {
						if _, isFunc := vs.Type.(*ast.FuncType); isFunc {
							t.Errorf("%s: package-level function variable %s: wire packages through imports and typed options", fset.Position(vs.Pos()), vs.Names[0])
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && sel.Sel.Name == "Setenv" {
					t.Errorf("%s: os.Setenv in library code: pass the setting as an option", fset.Position(sel.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
