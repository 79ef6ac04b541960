package caddymodule

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// glueStatements finds, in the non-test Go files under dir, the places
// where the Caddy glue states a default or a range itself instead of
// leaving it to the handler's Config (its Default* values and Validate):
//
//   - a declaration named default*/Default*;
//   - a range literal (IntRange, DurationRange) outside caddyglue, which
//     restates in the glue a bound the Config's Validate holds;
//   - a call checking a range (bounds.Int, bounds.Duration, Checker.In,
//     OptIn, DurationIn), parsing in one (ParseIntIn, ParseIntRange,
//     ParseDurationIn) or defining a command's flag (Int, Duration) given
//     a number written in the glue;
//   - Provision's "if x == zero { x = literal }", a default filled in by
//     the glue (x = handler.DefaultX is the handler's default, and passes).
//
// Each is returned as "path: what", path relative to dir.
func glueStatements(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		inGlue := strings.HasPrefix(rel, "caddyglue/")
		imported := map[string]bool{}
		for _, im := range f.Imports {
			name := strings.Trim(im.Path.Value, `"`)
			name = name[strings.LastIndex(name, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imported[name] = true
		}
		report := func(what string, args ...any) {
			found = append(found, rel+": "+fmt.Sprintf(what, args...))
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				if v, ok := spec.(*ast.ValueSpec); ok {
					for _, n := range v.Names {
						if defaultName.MatchString(n.Name) {
							report("declares %s", n.Name)
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if name := typeName(n.Type); !inGlue && (name == "IntRange" || name == "DurationRange") {
					report("range literal %s%s", name, render(fset, n.Elts))
				}
			case *ast.CallExpr:
				if name := typeName(n.Fun); rangeCalls[name] {
					for _, a := range n.Args {
						if _, lit := a.(*ast.CompositeLit); !lit && hasNumber(a) {
							report("%s given %s", name, render(fset, []ast.Expr{a}))
						}
					}
				}
			case *ast.IfStmt:
				if lhs, ok := zeroTest(n.Cond); ok && len(n.Body.List) == 1 {
					if as, ok := n.Body.List[0].(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 &&
						render(fset, as.Lhs) == lhs && isLiteral(as.Rhs[0], imported) {
						report("defaults %s to %s", lhs, render(fset, as.Rhs))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	return found
}

var defaultName = regexp.MustCompile(`^[dD]efault`)

var rangeCalls = map[string]bool{
	"Int": true, "Duration": true, "In": true, "OptIn": true, "DurationIn": true,
	"ParseIntIn": true, "ParseIntRange": true, "ParseDurationIn": true,
}

// typeName is the last name of a type or function expression.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return typeName(e.X)
	}
	return ""
}

// hasNumber reports whether e contains a number literal other than 0
// (which leaves an option unset).
func hasNumber(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if b, ok := n.(*ast.BasicLit); ok && (b.Kind == token.INT || b.Kind == token.FLOAT) && b.Value != "0" {
			found = true
		}
		return !found
	})
	return found
}

// isLiteral reports whether e is built of literals and constants of other
// packages only (5, "game_query", 10 * time.Second), as a default is.
func isLiteral(e ast.Expr, imported map[string]bool) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.BinaryExpr:
		return isLiteral(e.X, imported) && isLiteral(e.Y, imported)
	case *ast.ParenExpr:
		return isLiteral(e.X, imported)
	case *ast.SelectorExpr: // a constant of another package, but a handler's Default*: its own default
		pkg, ok := e.X.(*ast.Ident)
		return ok && imported[pkg.Name] && !defaultName.MatchString(e.Sel.Name)
	case *ast.CallExpr: // a conversion: caddy.Duration(5 * time.Second), not os.Getenv("X")
		if len(e.Args) != 1 {
			return false
		}
		if b, ok := e.Args[0].(*ast.BasicLit); ok && b.Kind == token.STRING {
			return false
		}
		return isLiteral(e.Args[0], imported)
	}
	return false
}

// zeroTest returns x of a condition x == 0 or x == "".
func zeroTest(cond ast.Expr) (string, bool) {
	b, ok := cond.(*ast.BinaryExpr)
	if !ok || b.Op != token.EQL {
		return "", false
	}
	lit, ok := b.Y.(*ast.BasicLit)
	if !ok || (lit.Value != "0" && lit.Value != `""`) {
		return "", false
	}
	return render(token.NewFileSet(), []ast.Expr{b.X}), true
}

// render writes expressions compactly, for the report.
func render(fset *token.FileSet, es []ast.Expr) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, exprString(e))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.BasicLit:
		return e.Value
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.KeyValueExpr:
		return exprString(e.Key) + ": " + exprString(e.Value)
	case *ast.BinaryExpr:
		return exprString(e.X) + " " + e.Op.String() + " " + exprString(e.Y)
	case *ast.UnaryExpr:
		return e.Op.String() + exprString(e.X)
	case *ast.ParenExpr:
		return "(" + exprString(e.X) + ")"
	case *ast.CallExpr:
		var args []string
		for _, a := range e.Args {
			args = append(args, exprString(a))
		}
		return exprString(e.Fun) + "(" + strings.Join(args, ", ") + ")"
	case *ast.IndexExpr:
		return exprString(e.X) + "[" + exprString(e.Index) + "]"
	}
	return fmt.Sprintf("%T", e)
}

// TestGlueStatesNoDefaultsOrRanges keeps defaults and ranges in the
// handlers' Configs: a default or range the glue states is an error, but
// for those listed in notYetInHandlers, which are to move to their
// handlers; one moved must leave the list, so the list only shrinks.
func TestGlueStatesNoDefaultsOrRanges(t *testing.T) {
	left := map[string]int{}
	for _, s := range notYetInHandlers {
		left[s]++
	}
	for _, s := range glueStatements(t, ".") {
		if left[s] > 0 {
			left[s]--
			continue
		}
		t.Errorf("%s: the Caddy glue states a default or a range; state it in the handler's Config (Default*, Validate) and use it from there", s)
	}
	for s, n := range left {
		if n > 0 {
			t.Errorf("%s: no longer in the glue; remove it from notYetInHandlers", s)
		}
	}
}

// Each kind of statement is found: a checker that finds nothing would
// pass any tree.
func TestGlueStatementsFound(t *testing.T) {
	dir := t.TempDir()
	src := `package caddyx

import (
	"time"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/internal/bounds"
)

const defaultWidth = 3

var widthRange = caddyglue.IntRange{Lo: 1, Hi: 9}

type M struct{ Width int; Wait time.Duration; Name string; Peer string }

func (m *M) Provision() error {
	if m.Width == 0 {
		m.Width = 4
	}
	if m.Wait == 0 {
		m.Wait = 5 * time.Second
	}
	if m.Name == "" {
		m.Name = "x"
	}
	if m.Peer == "" {
		m.Peer = m.Name
	}
	if m.Peer == "" {
		m.Peer = bounds.DefaultPeer
	}
	return bounds.Int("width", m.Width, 1, 9)
}
`
	if err := os.MkdirAll(filepath.Join(dir, "caddyx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "caddyx", "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := glueStatements(t, dir)
	want := []string{
		"caddyx/x.go: Int given {1}",
		"caddyx/x.go: Int given {9}",
		"caddyx/x.go: declares defaultWidth",
		"caddyx/x.go: defaults {m.Name} to {\"x\"}",
		"caddyx/x.go: defaults {m.Wait} to {5 * time.Second}",
		"caddyx/x.go: defaults {m.Width} to {4}",
		"caddyx/x.go: range literal IntRange{Lo: 1, Hi: 9}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// notYetInHandlers are the defaults and ranges the glue still states,
// each to move to its handler's Config.
var notYetInHandlers = []string{}
