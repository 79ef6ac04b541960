package caddymodule

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const familyPrefix = "github.com/gamegate/gamegate/caddymodule/"

// registries are the families whose exported registries other families
// may use: caddyquery's (RegisterQueryProtocol, LoadGateways). Every
// family may use caddyglue, which uses none.
var registries = []string{"caddyquery"}

// familyImports returns, for each package under dir, the caddymodule
// packages its non-test files import.
func familyImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range f.Imports {
				if p, ok := strings.CutPrefix(strings.Trim(im.Path.Value, `"`), familyPrefix); ok && !slices.Contains(imports[e.Name()], p) {
					imports[e.Name()] = append(imports[e.Name()], p)
				}
			}
		}
	}
	return imports
}

// layoutViolations names each import between families that is not of
// caddyglue or a registry, and any of caddyglue's.
func layoutViolations(imports map[string][]string) []string {
	var bad []string
	for family, ps := range imports {
		for _, p := range ps {
			if family == "caddyglue" || p != "caddyglue" && !slices.Contains(registries, p) {
				bad = append(bad, family+" imports "+p)
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// No family reaches into another: each imports caddyglue and the
// registries, nothing else of caddymodule.
func TestFamiliesImportOnlyGlueAndRegistries(t *testing.T) {
	imports := familyImports(t, ".")
	if len(imports) < 10 {
		t.Fatalf("found %d families importing caddymodule packages, want the layout's", len(imports))
	}
	for _, v := range layoutViolations(imports) {
		t.Errorf("%s: a family may import only caddyglue and %v", v, registries)
	}
	// The check finds what it guards against.
	if got := layoutViolations(map[string][]string{"caddymaster": {"caddyglue", "caddyqos"}, "caddyglue": {"caddyquery"}}); !slices.Equal(got, []string{"caddyglue imports caddyquery", "caddymaster imports caddyqos"}) {
		t.Errorf("layoutViolations found %v, want both", got)
	}
}
