package caddymodule

import (
	"cmp"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/caddymodule/caddycommands"
	"github.com/gamegate/gamegate/handlers/qos"
)

// Configuration is written once: a module embeds its handler's Config
// (the options, their defaults and ranges, its Validate) instead of
// declaring the options again. What a module struct may declare beside
// its embedded Configs (from handlers/, dgram/ or store/) is
//
//   - a handler's Config held whole (the query protocols' Config);
//   - modules it loads (a json.RawMessage field tagged caddy:"namespace=…");
//   - a reference to another module by its name (server_list's master and
//     game_query: a string option named as the module is);
//   - a former option name, marked Deprecated (caddyglue.Renamed);
//   - what ownOptionsAllowed lists, each with its reason;
//
// but never under the JSON key of an option of an embedded Config, which
// it would shadow (encoding/json sets the shallower field only).
//
// A struct of the glue's own that holds options (the app's udp servers)
// is looked into, its options reported by their path (udp.listen).

// ownOptionsAllowed are the options a module declares itself for a reason
// of the Caddy glue's, by the type declaring them and their JSON path.
var ownOptionsAllowed = map[string]string{
	"caddyrelay.Relay secrets": "the secrets' placeholders ({env.…}) are replaced with Caddy's replacer, and weak ones refused " +
		"on a listener beyond loopback (caddyglue.RefuseWeakSecrets), at Provision: the handler's Config takes the Sealer made from them",
	"caddyrelay.Relay name": "the key of the caddy.UsagePool the binding tables survive reloads in, which the glue holds",
	"caddyrelay.RelayAllocations secrets": "as the relay's secrets: placeholders replaced and weak ones refused at Provision; " +
		"relay.APIConfig takes the Sealer",
	"caddyrelay.RelayAllocations tokens": "placeholders replaced and weak ones refused beyond loopback at Provision; " +
		"relay.APIConfig takes the replaced tokens",
	"caddyrelay.RelayAllocations insecure_no_auth": "the module's choice between tokens and none, checked with tokens in its Validate; " +
		"the API serves whatever tokens it is given",
	"caddyrelay.RelayAllocations public_address": "placeholders replaced at Provision, then split into relay.APIConfig's PublicHost " +
		"and PublicPort",
	"caddyrelay.RelayAllocations regions": "JSON accepts a region as its ID alone (\"eu-west\"), which relay.APIRegion does not decode",
	"caddyapp.UDPServer udp.listen": "Caddy network addresses (port ranges, udp6/), resolved by Caddy into the addresses dgram " +
		"listens on",
}

// ownOption is an option a module struct declares itself.
type ownOption struct {
	declaredBy string // the Go type declaring it, as caddyrelay.Relay
	path       string // its JSON path: secrets, udp.listen
}

func (o ownOption) String() string { return o.declaredBy + " " + o.path }

// optionRules says what a module struct may declare (see above).
type optionRules struct {
	root        string                                      // gamegate's Go module path
	isModule    func(name string) bool                      // a registered module's name
	allowed     map[string]string                           // ownOptionsAllowed
	deprecated  func(owner reflect.Type, field string) bool // marked Deprecated
	allowedSeen map[string]bool                             // the entries of allowed met
}

// isConfigPackage reports whether a type of package p is a handler's
// configuration: handlers/, dgram/, store/.
func (r *optionRules) isConfigPackage(p string) bool {
	for _, dir := range []string{"/handlers/", "/dgram", "/store/"} {
		if strings.HasPrefix(p+"/", r.root+dir) {
			return true
		}
	}
	return false
}

// isGlue reports whether a type of package p is the Caddy glue's own.
func (r *optionRules) isGlue(p string) bool {
	return p == r.root+"/caddymodule" || strings.HasPrefix(p, r.root+"/caddymodule/")
}

// ownOptions returns the options the struct t declares itself, its
// promoted fields included, under prefix.
func (r *optionRules) ownOptions(t reflect.Type, prefix string) []ownOption {
	configKeys := map[string]bool{}
	r.configKeys(t, false, configKeys)
	return r.own(t, prefix, configKeys)
}

// configKeys adds to keys the JSON keys of the options the Configs t
// embeds hold, at any depth of embedding (inConfig: t is one of them).
func (r *optionRules) configKeys(t reflect.Type, inConfig bool, keys map[string]bool) {
	t = elem(t)
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch ft := elem(f.Type); {
		case key == "-":
		case f.Anonymous && key == "" && ft.Kind() == reflect.Struct:
			r.configKeys(ft, inConfig || r.isConfigPackage(ft.PkgPath()), keys)
		case inConfig && f.IsExported():
			keys[cmp.Or(key, f.Name)] = true
		}
	}
}

// own is ownOptions with the JSON keys configKeys of the Configs the
// struct t is promoted beside. A field of t under one of those keys is
// always its own option, whatever else it is: encoding/json sets it
// instead of the Config's field (or, at the same depth, neither).
func (r *optionRules) own(t reflect.Type, prefix string, configKeys map[string]bool) []ownOption {
	t = elem(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var own []ownOption
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := elem(f.Type)
		switch {
		case key == "-":
			continue
		case f.Anonymous && key == "" && ft.Kind() == reflect.Struct:
			// Promoted fields (encoding/json promotes those of an
			// unexported embedded struct too).
			if !r.isConfigPackage(ft.PkgPath()) {
				own = append(own, r.own(ft, prefix, configKeys)...)
			}
			continue
		case !f.IsExported():
			continue
		}
		if key == "" {
			key = f.Name
		}
		option := ownOption{declaredBy: t.String(), path: prefix + key}
		switch {
		case configKeys[key]: // declared over an option of an embedded Config
			own = append(own, option)
		case strings.Contains(f.Tag.Get("caddy"), "namespace="): // modules it loads
		case f.Type.Kind() == reflect.Struct && r.isConfigPackage(ft.PkgPath()): // a Config held whole
		case f.Type.Kind() == reflect.String && r.isModule(key): // another module, by name
		case r.deprecated(t, f.Name): // a former name
		case r.allowed[option.String()] != "":
			r.allowedSeen[option.String()] = true
		case ft.Kind() == reflect.Struct && r.isGlue(ft.PkgPath()): // the glue's room for options
			own = append(own, r.ownOptions(ft, option.path+".")...)
		default:
			own = append(own, option)
		}
	}
	return own
}

// elem is the type a pointer, slice or map type holds, at any depth.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

// deprecatedFields finds the fields whose doc comment has a Deprecated:
// paragraph, read from the source of the package declaring their struct.
type deprecatedFields struct {
	t     *testing.T
	root  string
	found map[string]bool // "pkgpath.Type.Field"
	read  map[string]bool // packages read
}

func (d *deprecatedFields) is(owner reflect.Type, field string) bool {
	pkg := owner.PkgPath()
	if !d.read[pkg] {
		d.read[pkg] = true
		d.readPackage(pkg)
	}
	name, _, _ := strings.Cut(owner.Name(), "[") // a generic type's
	return d.found[pkg+"."+name+"."+field]
}

func (d *deprecatedFields) readPackage(pkg string) {
	rel, ok := strings.CutPrefix(pkg, d.root+"/")
	if !ok {
		return
	}
	files, err := filepath.Glob(filepath.Join("..", filepath.FromSlash(rel), "*.go"))
	if err != nil || len(files) == 0 {
		d.t.Fatalf("%s: no Go files found (%v)", pkg, err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			d.t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Doc == nil || !strings.Contains("\n"+field.Doc.Text(), "\nDeprecated:") {
					continue
				}
				for _, n := range field.Names {
					d.found[pkg+"."+spec.Name.Name+"."+n.Name] = true
				}
			}
			return true
		})
	}
}

// newOptionRules returns the rules for the modules registered now.
func newOptionRules(t *testing.T) *optionRules {
	root := path.Dir(reflect.TypeFor[ownOption]().PkgPath())
	names := map[string]bool{}
	for _, id := range caddycommands.ModuleIDs() {
		names[caddy.ModuleID(id).Name()] = true
	}
	d := &deprecatedFields{t: t, root: root, found: map[string]bool{}, read: map[string]bool{}}
	return &optionRules{
		root:        root,
		isModule:    func(name string) bool { return names[name] },
		allowed:     ownOptionsAllowed,
		deprecated:  d.is,
		allowedSeen: map[string]bool{},
	}
}

// TestModulesEmbedTheirHandlersConfig keeps configuration written once:
// a module struct that declares an option of its own, instead of taking
// it from its handler's embedded Config, fails, unless the option is
// allowed above with its reason.
func TestModulesEmbedTheirHandlersConfig(t *testing.T) {
	rules := newOptionRules(t)
	ids := caddycommands.ModuleIDs()
	if len(ids) < 30 {
		t.Fatalf("found %d gamegate modules, want every one registered", len(ids))
	}
	for _, id := range ids {
		info, err := caddy.GetModule(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rules.ownOptions(reflect.TypeOf(info.New()), "") {
			t.Errorf("%s: option %q is declared by %s itself: embed the handler's Config that has it "+
				"(handlers/, dgram/, store/), so that its default, range and Validate are written once; "+
				"if the Caddy glue must own it, add %q to ownOptionsAllowed with the reason", id, o.path, o.declaredBy, o.String())
		}
	}
	for entry := range ownOptionsAllowed {
		if !rules.allowedSeen[entry] {
			t.Errorf("%s in ownOptionsAllowed is declared by no module any more: take it out", entry)
		}
	}
}

// A probe module for the rules: each kind of field the test allows, and
// the ones it must find.
type onceProbe struct {
	qos.Config
	onceProbeRoom
	// Loads other modules.
	Raw json.RawMessage `json:"raw,omitempty" caddy:"namespace=gamegate.query inline_key=protocol"`
	// The master it lists.
	Master string `json:"master,omitempty"`
	// Deprecated: the former name of rate.
	FormerRate float64 `json:"rate_limit,omitempty"`
	// A handler's Config held whole.
	Whole qos.Config `json:"whole"`
	// Mirrors qos.Config's burst.
	Burst2 int `json:"burst2,omitempty"`
	// Servers in a room of the glue's.
	Servers map[string][]*onceProbeServer `json:"servers,omitempty"`
	// Allowed below.
	Secrets []string `json:"secrets,omitempty"`
	hidden  int
	// Deprecated: a former name that takes the Config's burst: it
	// shadows it, so that the Config's field is never set.
	FormerBurst int `json:"burst,omitempty"`
	// Allowed below, yet the Config's own option: it shadows it.
	OwnTitles []string `json:"titles,omitempty"`
}

type onceProbeRoom struct {
	// Promoted into the probe's options.
	Window int `json:"window,omitempty"`
}

type onceProbeServer struct {
	Address string `json:"address"`
	qos.Config
}

// The rules find each option declared and pass what they allow: a
// check that finds nothing would pass any module.
func TestOwnOptionsFound(t *testing.T) {
	rules := newOptionRules(t)
	rules.allowed = map[string]string{"caddymodule.onceProbe secrets": "a probe",
		"caddymodule.onceProbe titles": "a probe"}
	var got []string
	for _, o := range rules.ownOptions(reflect.TypeFor[*onceProbe](), "") {
		got = append(got, o.String())
	}
	slices.Sort(got)
	want := []string{"caddymodule.onceProbe burst", "caddymodule.onceProbe burst2", "caddymodule.onceProbe titles",
		"caddymodule.onceProbeRoom window", "caddymodule.onceProbeServer servers.address"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
	if !rules.allowedSeen["caddymodule.onceProbe secrets"] {
		t.Error("the allowed option was not seen")
	}
}
