package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// sourceOf is the source a file of agent/ belongs to ("gpio" for
// source_gpio_trigger.go), or "" for the core and the kit (source.go).
func sourceOf(name string) string {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(name, ".go"), "source_")
	if !ok {
		return ""
	}
	x, _, _ := strings.Cut(rest, "_")
	return x
}

// A source's files (source_<x>*.go) name only their own identifiers, the
// core's and the kit's (source.go), never another source's: what two
// sources share lives in the kit, so a source can be read, changed or
// removed alone.
func TestSourcesUseOnlyTheKit(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	owner := map[string]string{} // package-level identifier -> its source
	for _, n := range agentFiles(t) {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					owner[d.Name.Name] = sourceOf(n)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						owner[s.Name.Name] = sourceOf(n)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							owner[id.Name] = sourceOf(n)
						}
					}
				}
			}
		}
	}
	var bad []string
	for n, f := range files {
		x := sourceOf(n)
		if x == "" {
			continue
		}
		ast.Inspect(f, func(nd ast.Node) bool {
			switch nd := nd.(type) {
			case *ast.SelectorExpr: // a field or method: only its operand names something here
				ast.Inspect(nd.X, func(m ast.Node) bool { return checkIdent(m, x, n, owner, fset, &bad) })
				return false
			case *ast.KeyValueExpr: // a struct literal's field name is not a package-level name
				if _, ok := nd.Key.(*ast.Ident); ok {
					ast.Inspect(nd.Value, func(m ast.Node) bool { return checkIdent(m, x, n, owner, fset, &bad) })
					return false
				}
			case *ast.Field: // a struct field's or parameter's name is its own
				ast.Inspect(nd.Type, func(m ast.Node) bool { return checkIdent(m, x, n, owner, fset, &bad) })
				return false
			}
			return checkIdent(nd, x, n, owner, fset, &bad)
		})
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: move it to the kit (source.go) or go through the table", b)
	}
}

// checkIdent notes an identifier of file n (source x) declared by another
// source.
func checkIdent(nd ast.Node, x, n string, owner map[string]string, fset *token.FileSet, bad *[]string) bool {
	if id, ok := nd.(*ast.Ident); ok {
		if o := owner[id.Name]; o != "" && o != x && id.Name != "_" {
			*bad = append(*bad, fset.Position(id.Pos()).String()+": source "+x+" names "+id.Name+" of source "+o)
		}
	}
	return true
}

// A source's files share its prefix: no config_<x>.go lies apart from its
// source_<x>.go, and no file of agent/ but the tests is over 600 lines (a
// long source splits into source_<x>_<part>.go).
func TestSourcesKeepTheirFilesTogether(t *testing.T) {
	for _, n := range agentFiles(t) {
		if x, ok := strings.CutPrefix(strings.TrimSuffix(n, ".go"), "config_"); ok {
			if _, err := os.Stat("source_" + x + ".go"); err == nil {
				t.Errorf("%s lies apart from source_%s.go: name it source_%s_config.go", n, x, x)
			}
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(b), "\n"); lines > 600 {
			t.Errorf("%s has %d lines, more than 600: split it by what its parts do", n, lines)
		}
	}
}

// agentFiles are the names of agent/'s Go files but the tests.
func agentFiles(t *testing.T) []string {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	return out
}
