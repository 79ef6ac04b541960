package tests

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/caddyserver/caddy/v2"
)

// markdownLink is an inline Markdown link or image: [text](target) or
// [text](target "title").
var markdownLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// docProse returns a Markdown file's lines outside fenced code blocks, with
// inline code spans blanked, so that code is not taken for links.
func docProse(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`[^`]*`")
	var out []string
	fenced := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		out = append(out, code.ReplaceAllString(l, "``"))
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation but '-' and '_' dropped, spaces as
// hyphens, and -1, -2, … after repeats.
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range docProse(t, file) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+string(rune('0'+n))] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// generatedDocs are documents that a command writes rather than a commit:
// a link to one is checked once it exists, and until then only logged.
var generatedDocs = map[string]string{
	"../BENCHMARKS.md": "go run ./bench/run",
}

// Every relative link of the documents docFiles lists (the README, the
// contributor guide, xcaddy.md, the tests' and benchmarks' how-tos and the
// pages under docs/) leads to a file or directory of the repository, and a
// link to a heading of a Markdown file (#anchor) to a heading that file
// has, as GitHub renders it.
func TestDocLinksResolve(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		for i, l := range docProse(t, file) {
			for _, m := range markdownLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						if by, ok := generatedDocs[dest]; ok && os.IsNotExist(err) {
							t.Logf("%s:%d: link %q: not written yet (by %s)", file, i+1, target, by)
							continue
						}
						t.Errorf("%s:%d: link %q: %v", file, i+1, target, err)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !headingAnchors(t, dest)[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, i+1, target, dest, anchor)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d relative links, want at least 100: is the link pattern still right?", checked)
	}
	t.Logf("%d relative links resolve", checked)
}

// Every gamegate module has a row in the README's module index, and the
// page that row links to names the module's ID.
func TestEveryModuleDocumented(t *testing.T) {
	modules := gamegateModules(t)
	if len(modules) < 29 {
		t.Fatalf("found %d gamegate modules, want at least 29: %v", len(modules), modules)
	}
	for _, m := range modules {
		id := m.id
		if m.page == "" {
			t.Errorf("module %s: no row `| `%s` | … | [page](…) |` in the README's module index", id, id)
			continue
		}
		page := m.page
		text, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("module %s: its page: %v", id, err)
			continue
		}
		if !strings.Contains(string(text), "`"+id+"`") {
			t.Errorf("module %s: its page %s does not name it as `%s`", id, page, id)
		}
	}
}

// Every module page has the sections a Caddy user looks for, in this
// order: its Caddyfile syntax, its JSON, its options, its metrics and an
// example (other sections may come between them).
func TestModulePagesHaveTheirSections(t *testing.T) {
	want := []string{"## Caddyfile", "## JSON", "## Options", "## Metrics", "## Example"}
	for _, page := range modulePages(t) {
		next := 0
		for _, l := range docProse(t, page) {
			if next < len(want) && strings.HasPrefix(l, want[next]) {
				next++
			}
		}
		if next < len(want) {
			t.Errorf("%s: no %q section after the ones before it (want %v, in order)", page, want[next], want)
		}
	}
}

// Every JSON option of every gamegate module, nested blocks' included, is
// named on the module's page (the page its README row links to), former
// names of renamed options too, so that no option goes undocumented.
func TestModuleOptionsDocumented(t *testing.T) {
	checked := 0
	for _, m := range gamegateModules(t) {
		if m.page == "" {
			continue // TestEveryModuleDocumented reports it
		}
		page, err := os.ReadFile(m.page)
		if err != nil {
			continue
		}
		for _, key := range jsonOptions(m.typ, map[reflect.Type]bool{}) {
			checked++
			if !strings.Contains(string(page), "`"+key+"`") {
				t.Errorf("module %s: option %s is not named on %s", m.id, key, m.page)
			}
		}
	}
	if checked < 200 {
		t.Errorf("checked %d options, want at least 200", checked)
	}
}

// gamegateModule is one of gamegate's own Caddy modules.
type gamegateModule struct {
	id   string
	typ  reflect.Type // its config struct
	page string       // the page the README's module index links it to; "" if it has no row
}

// gamegateModules returns the Caddy modules registered from gamegate's own
// packages, each with the page the README's module index links it to.
func gamegateModules(t *testing.T) []gamegateModule {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var modules []gamegateModule
	for _, id := range caddy.Modules() {
		info, err := caddy.GetModule(id)
		if err != nil {
			t.Fatal(err)
		}
		typ := reflect.TypeOf(info.New())
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if !strings.HasPrefix(typ.PkgPath(), "github.com/gamegate/gamegate") {
			continue
		}
		m := gamegateModule{id: id, typ: typ}
		if row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(id) + "` \\|.*\\]\\(([^)#]+)[^)]*\\)").FindSubmatch(readme); row != nil {
			m.page = filepath.Join("..", string(row[1]))
		}
		modules = append(modules, m)
	}
	return modules
}

// jsonOptions returns the JSON keys of a module's struct and of the
// structs of its own package it nests (blocks such as a health check).
func jsonOptions(typ reflect.Type, seen map[reflect.Type]bool) []string {
	if seen[typ] {
		return nil
	}
	seen[typ] = true
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			keys = append(keys, jsonOptions(ft, seen)...) // promoted fields
			continue
		}
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		keys = append(keys, name)
		if ft.Kind() == reflect.Struct && strings.HasPrefix(ft.PkgPath(), "github.com/gamegate/gamegate") {
			keys = append(keys, jsonOptions(ft, seen)...)
		}
	}
	return keys
}

// Every table of the documents renders as GitHub renders tables: a header
// row, then a delimiter row, then rows of the header's width, and no
// unescaped '|' inside a code span (GitHub splits cells before it reads
// code spans, so such a pipe would cut the cell in two).
func TestDocTablesRender(t *testing.T) {
	delimiter := regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)
	span := regexp.MustCompile("`[^`]*`")
	cells := func(row string) int { return strings.Count(strings.ReplaceAll(row, `\|`, ""), "|") }
	tables := 0
	for _, file := range docFiles(t) {
		lines := docProse(t, file) // code blocks blanked; spans blanked below
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rawLines := strings.Split(string(raw), "\n")
		width := 0
		for i, l := range lines {
			if !strings.HasPrefix(l, "|") {
				width = 0
				continue
			}
			for _, s := range span.FindAllString(rawLines[i], -1) {
				if strings.Contains(strings.ReplaceAll(s, `\|`, ""), "|") {
					t.Errorf("%s:%d: %s holds an unescaped '|' in a table: write \\|", file, i+1, s)
				}
			}
			switch {
			case width == 0:
				width = cells(l)
				tables++
				if i+1 >= len(lines) || !delimiter.MatchString(lines[i+1]) || cells(lines[i+1]) != width {
					t.Errorf("%s:%d: a table without a header row and a delimiter row of its width", file, i+1)
				}
			case cells(l) != width:
				t.Errorf("%s:%d: a table row of %d cells under a header of %d", file, i+1, cells(l)-1, width-1)
			}
		}
	}
	if tables < 40 {
		t.Errorf("found %d tables, want at least 40", tables)
	}
}
