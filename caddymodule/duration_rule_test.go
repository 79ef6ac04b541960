package caddymodule

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/caddymodule/caddycommands"
	"github.com/gamegate/gamegate/internal/duration"
)

var durationType = reflect.TypeFor[caddy.Duration]()

// configDurationType is the duration of the handlers' Configs, which
// modules embed.
var configDurationType = reflect.TypeFor[duration.Duration]()

// bareDurations returns JSON values of type t, each with one duration
// option (at any depth up to depth) set to the bare number n, and that
// option's name as its error names it ("health_check interval").
func bareDurations(t reflect.Type, n, depth int) (values []any, names []string) {
	if depth == 0 {
		return nil, nil
	}
	switch {
	case t == durationType || t == configDurationType:
		return []any{n}, []string{""}
	case t.Kind() == reflect.Pointer:
		return bareDurations(t.Elem(), n, depth)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		vs, ns := bareDurations(t.Elem(), n, depth-1)
		for i := range vs {
			vs[i] = []any{vs[i]}
		}
		return vs, ns
	case t.Kind() == reflect.Map:
		vs, ns := bareDurations(t.Elem(), n, depth-1)
		for i := range vs {
			vs[i] = map[string]any{"status": vs[i]}
		}
		return vs, ns
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			vs, ns := bareDurations(f.Type, n, depth)
			// An embedded struct, or an untagged one whose fields are
			// the module's (a query protocol's Config), is inline.
			if name == "" && (f.Anonymous || f.Type.Kind() == reflect.Struct) {
				values, names = append(values, vs...), append(names, ns...)
				continue
			}
			for i := range vs {
				values = append(values, map[string]any{name: vs[i]})
				names = append(names, strings.TrimSpace(name+" "+ns[i]))
			}
		}
	}
	return values, names
}

// mergeJSON returns base with over's values in place, objects merged.
func mergeJSON(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	maps.Copy(out, base)
	for k, v := range over {
		b, bok := out[k].(map[string]any)
		o, ook := v.(map[string]any)
		if bok && ook {
			v = mergeJSON(b, o)
		}
		out[k] = v
	}
	return out
}

// requiredOptions are what a module needs besides a duration to get as
// far as checking it.
var requiredOptions = map[string]map[string]any{
	"gamegate.udp.protocols.a2s_shield": {"upstream": "127.0.0.1:27015"},
	"layer4.handlers.a2s_shield":        {"upstream": "127.0.0.1:27015"},
	"gamegate.udp.protocols.gqp":        {"commands": map[string]any{"status": map[string]any{"url": "http://127.0.0.1:1/"}}},
	"layer4.handlers.gqp":               {"commands": map[string]any{"status": map[string]any{"url": "http://127.0.0.1:1/"}}},
	"gamegate.udp.protocols.relay":      {"secrets": []string{"0123456789abcdef0123456789abcdef"}},
	"layer4.handlers.relay":             {"secrets": []string{"0123456789abcdef0123456789abcdef"}},
	"http.handlers.relay_allocations":   {"secrets": []string{"0123456789abcdef0123456789abcdef"}, "insecure_no_auth": true, "public_address": "127.0.0.1:7777"},
}

// pendingDurations are the options whose Validate does not yet apply
// internal/bounds' rule: their own range checks accept 120ns.
var pendingDurations = map[string]bool{}

// One rule for every duration option of every module: JSON reads a bare
// number as nanoseconds, so "ban_duration": 120 is 120ns, and it is
// refused, naming the option and hinting at "120s", whatever the option's
// own range ("expiry": 900 was refused, "ban_duration": 120 accepted).
func TestBareNumberDurationsRefused(t *testing.T) {
	checked := 0
	for _, id := range caddycommands.ModuleIDs() {
		m, _ := caddy.GetModule(id)
		values, names := bareDurations(reflect.TypeOf(m.New()), 120, 4)
		for i, v := range values {
			name := id + " " + names[i]
			body := mergeJSON(requiredOptions[id], v.(map[string]any))
			cfg := moduleConfig(id, body)
			if strings.HasPrefix(id, "caddy.storage.") {
				body["module"] = strings.TrimPrefix(id, "caddy.storage.")
				cfg, _ = json.Marshal(map[string]any{"storage": body})
			}
			if cfg == nil {
				t.Errorf("%s: not placed in a configuration by this test", name)
				continue
			}
			checked++
			err, panicked := validateConfig(cfg)
			if panicked != nil {
				t.Fatalf("%s: %v", name, panicked)
			}
			// The error names the option (its current name, for a
			// former one), which other tests check.
			refused := err != nil && strings.Contains(err.Error(), `not 120ns (a bare JSON number is nanoseconds: write "120s")`)
			switch {
			case pendingDurations[name] && refused:
				t.Errorf("%s: refused as the rule says: remove it from pendingDurations", name)
			case !pendingDurations[name] && !refused:
				t.Errorf("%s: 120: got %v, want it refused as 120ns with a hint", name, err)
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d duration options, want every one", checked)
	}
}
