package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// docSnippet is a fenced code block of a document.
type docSnippet struct {
	file string
	line int    // of the opening fence
	lang string // the info string's first word
	body string // without the fence's indentation
	skip string // the reason given in a skip marker before it, if any
}

func (s docSnippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// skipMarker marks the snippet after it as deliberately not loadable, with
// the reason (see tests/README.md).
var skipMarker = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*skip\b(.*?)-->\s*$`)

// docSnippets returns the fenced code blocks of a Markdown file.
func docSnippets(t *testing.T, file string) []docSnippet {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docSnippet
	for i := 0; i < len(lines); i++ {
		indent, info, ok := strings.Cut(lines[i], "```")
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		s := docSnippet{file: file, line: i + 1}
		if f := strings.Fields(info); len(f) > 0 {
			s.lang = f[0]
		}
		if i > 0 {
			if m := skipMarker.FindStringSubmatch(lines[i-1]); m != nil {
				s.skip = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(m[1]), ":—-"))
				if s.skip == "" {
					t.Errorf("%s: a docs-test skip marker without its reason", s)
					s.skip = "(no reason)"
				}
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		s.body = strings.Join(body, "\n") + "\n"
		out = append(out, s)
	}
	return out
}

// docFiles are the documents whose snippets users copy: the README,
// xcaddy.md, the contributor guide, the tests' and benchmarks' how-tos and
// every page under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "../xcaddy.md", "../CONTRIBUTING.md", "README.md", "../bench/README.md"}
	err := filepath.WalkDir("../docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}

// modulePages are the pages of docs/ that document modules: the app, the
// handlers, matchers, query protocols and storage, but not their indexes
// or the result shape.
func modulePages(t *testing.T) []string {
	t.Helper()
	pages := []string{"../docs/app.md"}
	for _, dir := range []string{"handlers", "matchers", "query", "storage"} {
		found, err := filepath.Glob(filepath.Join("../docs", dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			if base := filepath.Base(f); base != "README.md" && base != "result.md" {
				pages = append(pages, f)
			}
		}
	}
	if len(pages) < 24 {
		t.Fatalf("found %d module pages under ../docs, want at least 24: %v", len(pages), pages)
	}
	return pages
}

// validateDoc runs what `gamegate validate` runs on a JSON configuration:
// decode, then provision and validate every app without starting it.
// storage redis checks its server when it is provisioned: the addresses
// of a documented or golden configuration (a private network's, a name
// that only resolves there) are replaced by a closed loopback port, and
// its CA files by one made here, so that tests reach no other host and
// need no files of the operator's.
func validateDoc(t *testing.T, config []byte) error {
	t.Helper()
	config = storageOnLoopback(t, config)
	var cfg caddy.Config
	if err := caddy.StrictUnmarshalJSON(config, &cfg); err != nil {
		return err
	}
	cfg.Admin = &caddy.AdminConfig{Disabled: true}
	return caddy.Validate(&cfg)
}

// checkCaddyfile requires a Caddyfile to be formatted as `caddy fmt`
// formats it, to adapt without warnings, and to load.
func checkCaddyfile(t *testing.T, where string, body []byte) {
	t.Helper()
	if formatted := caddyfile.Format(body); !bytes.Equal(formatted, body) {
		t.Errorf("%s: Caddyfile input is not formatted; `caddy fmt` makes it:\n%s", where, formatted)
	}
	// A former option name still loads, with a warning a reader of the
	// docs would meet: the docs use the current names.
	for _, d := range deprecationsDuring(t, func() {
		config, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": where})
		if err != nil {
			t.Errorf("%s: does not adapt: %v", where, err)
			return
		}
		for _, w := range warnings {
			t.Errorf("%s: adapting warns: %s", where, w)
		}
		if err := validateDoc(t, config); err != nil {
			t.Errorf("%s: does not load: %v", where, err)
		}
	}) {
		t.Errorf("%s: uses a deprecated spelling: %s", where, d)
	}
}

// Every Caddyfile and JSON configuration in the documentation loads as
// `gamegate validate` loads it (adapt, decode, provision, validate) and
// every Caddyfile is formatted as `caddy fmt` formats it: the
// documentation is configuration users copy. Snippets point at upstreams
// that need not answer: loading never needs them. A snippet that cannot
// load on purpose is marked (tests/README.md, "Snippets in the docs").
func TestDocSnippetsLoad(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // Caddy's default storage, if a snippet provisions it
	var snippets []docSnippet
	for _, file := range docFiles(t) {
		snippets = append(snippets, docSnippets(t, file)...)
	}
	// The environment variables the snippets read for secrets, set as a
	// user would: to a long random value each.
	envRef := regexp.MustCompile(`\{env\.([A-Za-z0-9_]+)\}|\{\$([A-Za-z0-9_]+)\}`)
	for _, s := range snippets {
		for _, m := range envRef.FindAllStringSubmatch(s.body, -1) {
			name := m[1] + m[2]
			if _, set := os.LookupEnv(name); !set {
				t.Setenv(name, rand.Text()+rand.Text())
			}
		}
	}
	counts := map[string]int{}
	for _, s := range snippets {
		switch {
		case s.lang != "caddyfile" && s.lang != "json":
			continue
		case s.skip != "":
			t.Logf("%s: %s snippet skipped: %s", s, s.lang, s.skip)
			continue
		}
		if s.lang == "caddyfile" {
			counts[s.file+" caddyfile"]++
			checkCaddyfile(t, s.String(), []byte(s.body))
			continue
		}
		if !strings.Contains(s.body, `"apps"`) {
			// An answer or a request body, not a configuration (a
			// module's configuration is shown inside a whole one).
			var top map[string]any
			if json.Unmarshal([]byte(s.body), &top) == nil && (top["handler"] != nil || top["routes"] != nil) {
				t.Errorf("%s: a module's configuration without the configuration around it: show it under \"apps\", or mark it", s)
			}
			continue
		}
		counts[s.file+" json"]++
		for _, d := range deprecationsDuring(t, func() {
			if err := validateDoc(t, []byte(s.body)); err != nil {
				t.Errorf("%s: does not load: %v", s, err)
			}
		}) {
			t.Errorf("%s: uses a deprecated spelling: %s", s, d)
		}
	}
	// Every module page shows its configuration both ways, and loads.
	for _, page := range modulePages(t) {
		for _, lang := range []string{"caddyfile", "json"} {
			if counts[page+" "+lang] == 0 {
				t.Errorf("%s: no %s configuration loaded; a module page shows its Caddyfile and its JSON", page, lang)
			}
		}
	}
	t.Logf("snippets loaded: %v", counts)

	// The showcase configuration, as written (with its defaults for the
	// environment variables it reads).
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	checkCaddyfile(t, "../Caddyfile.example", example)

	// The examples, as adapted (they are run elsewhere, with the services
	// they need).
	examples, err := filepath.Glob("../examples/*.Caddyfile")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples/*.Caddyfile: %v", err)
	}
	for _, file := range examples {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deprecationsDuring(t, func() {
			if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": file}); err != nil {
				t.Errorf("%s: does not adapt: %v", file, err)
			}
		}) {
			t.Errorf("%s: uses a deprecated spelling: %s", file, d)
		}
	}
}

// The README stays an overview that links to docs/, and the contributor
// guide a guide: past these lengths, move detail to the page that owns it.
func TestDocsREADMEAndContributingStayShort(t *testing.T) {
	for file, limit := range map[string]int{"../README.md": 12000, "../CONTRIBUTING.md": 15000} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := utf8.RuneCount(data); n > limit {
			t.Errorf("%s: got %d characters, want at most %d", file, n, limit)
		}
	}
}

// storageOnLoopback returns config with a storage redis's addresses
// replaced by a closed loopback port and its CA files by a CA of the
// test's; any other configuration is returned as it is.
func storageOnLoopback(t *testing.T, config []byte) []byte {
	t.Helper()
	var c map[string]any
	if json.Unmarshal(config, &c) != nil {
		return config // not JSON: the caller reports it
	}
	st, ok := c["storage"].(map[string]any)
	if !ok || st["module"] != "redis" {
		return config
	}
	st["address"] = []string{"127.0.0.1:1"}
	if _, ok := st["tls_trusted_ca_certs"]; ok {
		ca, _, _ := writePrivateCA(t, t.TempDir())
		st["tls_trusted_ca_certs"] = []string{ca}
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
