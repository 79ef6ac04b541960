package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/gamegate/gamegate/caddymodule/caddycommands"
)

// validateConfig runs what `gamegate validate` runs on a JSON
// configuration (decode, then Caddy's provisioning and validation of every
// app without starting it) and turns a panic into an error naming it.
func validateConfig(config []byte) (err error, panicked error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	var cfg caddy.Config
	if err := caddy.StrictUnmarshalJSON(config, &cfg); err != nil {
		return err, nil
	}
	cfg.Admin = &caddy.AdminConfig{Disabled: true}
	return caddy.Validate(&cfg), nil
}

// appConfig wraps the gamegate app's JSON into a whole configuration.
func appConfig(app []byte) []byte {
	return []byte(`{"apps":{"gamegate":` + string(app) + `}}`)
}

// moduleConfig returns a configuration holding the module id configured
// by body (a JSON object), in the place where Caddy loads it from, or nil
// for modules this test does not place.
func moduleConfig(id string, body map[string]any) []byte {
	ns, name := id, ""
	if i := strings.LastIndex(id, "."); i >= 0 {
		ns, name = id[:i], id[i+1:]
	}
	with := func(key string) map[string]any {
		m := map[string]any{key: name}
		for k, v := range body {
			m[k] = v
		}
		return m
	}
	var cfg any
	switch ns {
	case "gamegate":
		cfg = map[string]any{"apps": map[string]any{"gamegate": body}}
	case "gamegate.udp.protocols":
		cfg = map[string]any{"apps": map[string]any{"gamegate": map[string]any{"udp": []any{
			map[string]any{"listen": []string{"127.0.0.1:9"}, "protocols": []any{with("protocol")}}}}}}
	case "gamegate.query":
		cfg = map[string]any{"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"s": map[string]any{
			"listen": []string{"127.0.0.1:9"}, "routes": []any{map[string]any{"handle": []any{map[string]any{
				"handler": "game_query", "servers": map[string]any{"a": map[string]any{"address": "127.0.0.1:1", "protocol": with("protocol")}}}}}}}}}}}
	case "http.handlers":
		cfg = map[string]any{"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"s": map[string]any{
			"listen": []string{"127.0.0.1:9"}, "routes": []any{map[string]any{"handle": []any{with("handler")}}}}}}}}
	case "layer4.handlers":
		cfg = map[string]any{"apps": map[string]any{"layer4": map[string]any{"servers": map[string]any{"s": map[string]any{
			"listen": []string{"udp/127.0.0.1:9"}, "routes": []any{map[string]any{"handle": []any{with("handler")}}}}}}}}
	case "layer4.matchers":
		cfg = map[string]any{"apps": map[string]any{"layer4": map[string]any{"servers": map[string]any{"s": map[string]any{
			"listen": []string{"udp/127.0.0.1:9"}, "routes": []any{map[string]any{"match": []any{map[string]any{name: body}},
				"handle": []any{map[string]any{"handler": "echo"}}}}}}}}}
	default:
		return nil
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// nullElements returns JSON values of type t, each with one list or map
// (at any depth up to depth) holding a null element, or a module field
// that is null.
func nullElements(t reflect.Type, depth int) []any {
	if depth == 0 {
		return nil
	}
	switch {
	case t == rawMessageType:
		return []any{nil}
	case t.Kind() == reflect.Pointer:
		return nullElements(t.Elem(), depth)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		out := []any{[]any{nil}}
		for _, e := range nullElements(t.Elem(), depth-1) {
			out = append(out, []any{e})
		}
		return out
	case t.Kind() == reflect.Map:
		out := []any{map[string]any{"k": nil}}
		for _, e := range nullElements(t.Elem(), depth-1) {
			out = append(out, map[string]any{"k": e})
		}
		return out
	case t.Kind() == reflect.Struct:
		var out []any
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			inner := nullElements(f.Type, depth)
			if f.Anonymous && name == "" {
				out = append(out, inner...) // promoted fields
				continue
			}
			if name == "" {
				name = f.Name
			}
			for _, e := range inner {
				out = append(out, map[string]any{name: e})
			}
		}
		return out
	}
	return nil
}

// A null where a configuration has an object or a value in a list or a
// map, at any depth, of any module this package registers, is refused or
// accepted, never a panic: {"apps":{"gamegate":{"udp":[null]}}} panicked in
// Provision.
func TestNullElementsDoNotPanic(t *testing.T) {
	placed := 0
	for _, id := range caddycommands.ModuleIDs() {
		m, _ := caddy.GetModule(id)
		docs := nullElements(reflect.TypeOf(m.New()), 4)
		if moduleConfig(id, map[string]any{}) == nil {
			t.Logf("%s: not placed in a configuration by this test", id)
			continue
		}
		placed++
		for _, d := range docs {
			body, ok := d.(map[string]any)
			if !ok {
				continue
			}
			cfg := moduleConfig(id, body)
			if _, panicked := validateConfig(cfg); panicked != nil {
				t.Errorf("%s: %s: %v", id, cfg, panicked)
			}
		}
	}
	if placed < 20 {
		t.Fatalf("placed %d modules, want every gamegate module's place known", placed)
	}
}

// FuzzAppConfig loads random JSON as the gamegate app's configuration the
// way `gamegate validate` does (decode, provision, validate, clean up):
// errors are fine, panics are not. Seeded with the app's configurations in
// the golden Caddyfile adaptations.
func FuzzAppConfig(f *testing.F) {
	f.Add([]byte(`{"udp":[null]}`))
	f.Add([]byte(`{"udp":[{"listen":["127.0.0.1:9000"],"protocols":[null]}]}`))
	f.Add([]byte(`{"udp":[{"listen":["127.0.0.1"],"protocols":[{"protocol":"qos"}]}]}`))
	files, _ := filepath.Glob("testdata/adapt/gamegate_*.caddytest")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		caddyfile, _, _ := strings.Cut(string(data), "----------")
		adapted, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
		if err != nil {
			continue
		}
		var cfg struct {
			Apps struct {
				Gamegate json.RawMessage `json:"gamegate"`
			} `json:"apps"`
		}
		if json.Unmarshal(adapted, &cfg) == nil && cfg.Apps.Gamegate != nil {
			f.Add([]byte(cfg.Apps.Gamegate))
		}
	}
	f.Fuzz(func(t *testing.T, app []byte) {
		if _, panicked := validateConfig(appConfig(app)); panicked != nil {
			t.Fatalf("%s: %v", app, panicked)
		}
	})
}
