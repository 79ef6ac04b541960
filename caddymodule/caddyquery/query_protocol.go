package caddyquery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
)

// RegisterQueryProtocol registers the game query protocol name as the
// Caddy module gamegate.query.<name>, configured by its handler package's
// Config C: the whole Caddy glue of a protocol (see the contributor
// guide's "Adding a game query protocol").
func RegisterQueryProtocol[C any, P queryConfig[C]](name string) {
	caddy.RegisterModule(&QueryProtocolModule[C, P]{name: name})
}

// queryConfig is a *C that is a query.ProtocolConfig.
type queryConfig[C any] interface {
	*C
	query.ProtocolConfig
}

// QueryProtocolModule is a game query protocol as a module of the
// gamegate.query namespace, for game_query's servers and ad_hoc. Its JSON
// is the protocol's Config, field for field (the Config's doc comments
// are the options' documentation); its Caddyfile block takes the same
// options, each under its JSON name:
//
//	<protocol> {
//		<option> <value>
//	}
//
// Numbers and durations are read in the ranges the Config's Validate
// holds them to, so an error points at its line; a size (an option named
// *_size, or tagged caddyfile:"size") may carry a unit (64KiB), a duration is positive (leave it out
// for the default), a bool option takes no value (or on|off, tagged caddyfile:"onoff"), a list takes one or
// more.
type QueryProtocolModule[C any, P queryConfig[C]] struct {
	// The protocol's configuration: its fields are the module's.
	Config C

	name     string
	protocol query.Protocol
}

// CaddyModule returns the Caddy module information.
func (m *QueryProtocolModule[C, P]) CaddyModule() caddy.ModuleInfo {
	name := m.name
	return caddy.ModuleInfo{
		ID:  caddy.ModuleID("gamegate.query." + name),
		New: func() caddy.Module { return &QueryProtocolModule[C, P]{name: name} },
	}
}

// block names the module in Caddyfile errors and warnings.
func (m *QueryProtocolModule[C, P]) block() string { return "game_query " + m.name }

// MarshalJSON encodes the Config.
func (m *QueryProtocolModule[C, P]) MarshalJSON() ([]byte, error) { return json.Marshal(&m.Config) }

// UnmarshalJSON decodes the Config, refusing unknown keys as Caddy does.
func (m *QueryProtocolModule[C, P]) UnmarshalJSON(b []byte) error {
	return caddy.StrictUnmarshalJSON(b, &m.Config)
}

// Provision moves renamed options to their current names and builds the
// protocol, from a copy of the Config whose secrets have their
// placeholders replaced (query.SecretHolder).
func (m *QueryProtocolModule[C, P]) Provision(ctx caddy.Context) error {
	if err := moveRenamed(ctx, m.block(), &m.Config); err != nil {
		return err
	}
	cfg := m.Config
	if s, ok := any(&cfg).(query.SecretHolder); ok {
		repl := caddy.NewReplacer()
		for name, v := range s.Secrets() {
			if *v == "" {
				continue
			}
			r, err := caddyglue.Replaced(repl, m.block(), name, *v)
			if err != nil {
				return err
			}
			*v = r
		}
	}
	p, err := P(&cfg).NewProtocol()
	m.protocol = p
	return err
}

// GivenSecrets names the secret options (query.SecretHolder) the
// configuration gives, in name order.
func (m *QueryProtocolModule[C, P]) GivenSecrets() []string {
	s, ok := any(&m.Config).(query.SecretHolder)
	if !ok {
		return nil
	}
	var names []string
	for name, v := range s.Secrets() {
		if *v != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Validate checks the configuration.
func (m *QueryProtocolModule[C, P]) Validate() error { return P(&m.Config).Validate() }

// Cleanup closes the protocol, if it holds something to close.
func (m *QueryProtocolModule[C, P]) Cleanup() error {
	if c, ok := m.protocol.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// QueryProtocol returns the protocol Provision built: what game_query
// queries, with the optional interfaces it implements.
func (m *QueryProtocolModule[C, P]) QueryProtocol() query.Protocol { return m.protocol }

// Name returns the protocol's name.
func (m *QueryProtocolModule[C, P]) Name() string { return m.name }

// Status asks the protocol.
func (m *QueryProtocolModule[C, P]) Status(ctx context.Context, address string) (*query.Status, error) {
	return m.protocol.Status(ctx, address)
}

// Command asks the protocol.
func (m *QueryProtocolModule[C, P]) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return m.protocol.Command(ctx, address, command, args)
}

// FindsPort asks the protocol, or before Provision one built from a zero
// Config (query.PortFinder does not depend on settings).
func (m *QueryProtocolModule[C, P]) FindsPort(address string) bool {
	p := m.protocol
	if p == nil {
		p, _ = P(new(C)).NewProtocol()
	}
	return p != nil && query.FindsPort(p, address)
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens: see the
// type's documentation.
func (m *QueryProtocolModule[C, P]) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	block := m.block()
	var former caddyglue.FormerNames
	if r, ok := any(&m.Config).(query.Renamer); ok {
		former = make(caddyglue.FormerNames)
		for _, n := range r.RenamedOptions() {
			former[n.Former] = n.Current
		}
	}
	cfg := reflect.ValueOf(&m.Config).Elem()
	return caddyglue.ParseRenamedModuleBlock(d, block, nil, former, func(opt string) error {
		field := caddyglue.ConfigField(cfg, opt)
		if !field.IsValid() {
			return caddyglue.UnknownOption(d, block, opt)
		}
		return parseConfigOption[C, P](d, block, opt, field)
	})
}

// parseConfigOption reads the value of the option opt into field, a
// field of a C, checking it against the range C's Validate holds it to.
func parseConfigOption[C any, P queryConfig[C]](d *caddyfile.Dispenser, block, opt string, field reflect.Value) error {
	as := d.Val() // the option as written: perhaps its former name
	switch field.Interface().(type) {
	case duration.Duration:
		s, err := caddyglue.ParseSingleArg(d)
		if err != nil {
			return err
		}
		v, err := duration.Parse(s)
		if err == nil && v > 0 && time.Duration(v) < bounds.MinDuration {
			return d.Errf("option '%s': want a duration of at least %s, got '%s'", as, bounds.MinDuration, s)
		}
		if err != nil || v <= 0 || caddyglue.ProbeRange[C, P](opt, int64(v)) != nil {
			want := "a positive duration"
			if r := caddyglue.ProbeRange[C, P](opt, math.MaxInt64); r != nil && r.Lo > int64(bounds.MinDuration) {
				want += " from " + time.Duration(r.Lo).String() + " to " + time.Duration(r.Hi).String()
			} else if r != nil {
				want += " up to " + time.Duration(r.Hi).String()
			}
			return d.Errf("option '%s': want %s, got '%s'", as, want, s)
		}
		field.SetInt(int64(v))
	case int, int64:
		s, err := caddyglue.ParseSingleArg(d)
		if err != nil {
			return err
		}
		// A size (an option named *_size, or tagged caddyfile:"size") may
		// carry a unit, as 64KiB; one tagged caddyfile:"integer" may not.
		kind := optionTag[C](opt)
		isSize := kind == "size" || strings.HasSuffix(opt, "_size") && kind != "integer"
		v, err := strconv.ParseInt(s, 10, 64)
		if isSize {
			var ok bool
			if v, ok = caddyglue.ParseByteSize(s); ok {
				err = nil
			} else {
				err = strconv.ErrSyntax
			}
		}
		if err != nil || field.OverflowInt(v) || caddyglue.ProbeRange[C, P](opt, v) != nil {
			want, unit := "an integer", ""
			if isSize {
				want, unit = "a size", " bytes (such as 65536 or 64KiB)"
			}
			if r := caddyglue.ProbeRange[C, P](opt, math.MaxInt64); r != nil {
				want += " in [" + strconv.FormatInt(r.Lo, 10) + ", " + strconv.FormatInt(r.Hi, 10) + "]"
			}
			return d.Errf("option '%s': want %s%s, got '%s'", as, want, unit, s)
		}
		field.SetInt(v)
	case string:
		s, err := caddyglue.ParseSingleArg(d)
		if c, ok := any(new(C)).(query.Chooser); ok && err == nil {
			if choices, ok := c.OptionChoices()[opt]; ok && !slices.Contains(choices, s) {
				return d.Errf("option '%s': want one of %s, got '%s'", as, strings.Join(choices, ", "), s)
			}
		}
		if err == nil {
			err = checkOption[C](d, block, opt, s)
		}
		field.SetString(s)
		return err
	case bool, *bool:
		// A flag takes no value; one tagged caddyfile:"onoff" takes on or
		// off (a *bool's nil is its default).
		var on bool
		var err error
		if optionTag[C](opt) == "onoff" {
			var v string
			v, err = caddyglue.ParseOneOf(d, "on", "off")
			on = v == "on"
		} else {
			err = caddyglue.ParseFlag(d, &on)
		}
		if field.Kind() == reflect.Pointer {
			field.Set(reflect.ValueOf(&on))
		} else {
			field.SetBool(on)
		}
		return err
	case []string:
		values, err := caddyglue.ParseArgs(d)
		for _, v := range values {
			if err == nil {
				err = checkOption[C](d, block, opt, v)
			}
		}
		field.Set(reflect.ValueOf(values))
		return err
	default:
		return d.Errf("option '%s' cannot be set in a Caddyfile: use JSON", as)
	}
	return nil
}

// checkOption checks value's form as C's CheckOption does (an
// query.OptionChecker's), at the option's line.
func checkOption[C any](d *caddyfile.Dispenser, block, opt, value string) error {
	if c, ok := any(new(C)).(query.OptionChecker); ok {
		if err := c.CheckOption(opt, value); err != nil {
			return d.Errf("%s: %s: %v", block, opt, err)
		}
	}
	return nil
}

// optionTag returns the caddyfile tag of C's option name: "size" or
// "integer" where the option's name does not tell whether it takes a
// unit, "onoff" for a bool written on or off rather than as a flag.
func optionTag[C any](name string) string {
	for _, f := range reflect.VisibleFields(reflect.TypeFor[C]()) {
		if key, _, _ := strings.Cut(f.Tag.Get("json"), ","); key == name && f.IsExported() {
			return f.Tag.Get("caddyfile")
		}
	}
	return ""
}

// moveRenamed moves the options of cfg given under a former name (a
// query.Renamer's) to their current names, with one warning per load
// naming module; giving both is an error.
func moveRenamed(ctx caddy.Context, module string, cfg any) error {
	r, ok := cfg.(query.Renamer)
	if !ok {
		return nil
	}
	v := reflect.ValueOf(cfg).Elem()
	for _, n := range r.RenamedOptions() {
		former, current := caddyglue.ConfigField(v, n.Former), caddyglue.ConfigField(v, n.Current)
		if !former.IsValid() || !current.IsValid() || former.Type() != current.Type() {
			return fmt.Errorf("renamed option %s: no such option of the same type as %s", n.Former, n.Current)
		}
		if former.IsZero() {
			continue
		}
		if !current.IsZero() {
			return caddyglue.BothNames(n.Former, n.Current)
		}
		caddyglue.WarnRenamed(ctx, module, n.Former, n.Current)
		current.Set(former)
		former.SetZero()
	}
	return nil
}
