package caddymaster

import (
	"reflect"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/internal/duration"
)

// registerHandlerDirective registers the HTTP handler module M's
// Caddyfile directive name, ordered before respond, which reads M with its
// UnmarshalCaddyfile: JSON and the Caddyfile share one parser.
func registerHandlerDirective[M any, P interface {
	*M
	caddyhttp.MiddlewareHandler
	caddyfile.Unmarshaler
}](name string) {
	httpcaddyfile.RegisterHandlerDirective(name, func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		m := P(new(M))
		err := m.UnmarshalCaddyfile(h.Dispenser)
		return m, err
	})
	httpcaddyfile.RegisterDirectiveOrder(name, httpcaddyfile.Before, "respond")
}

// validated is a *C, a handler's Config, that checks its options.
type validated[C any] interface {
	*C
	Validate() error
}

// blockSyntax is what a module's Caddyfile block does not tell by its
// Config's field types.
type blockSyntax struct {
	// repeatable are the list options that may be given on several
	// lines, each adding values.
	repeatable []string
	// inRange are the counts read in the range Validate holds them to,
	// so that their errors keep their line; other counts are read as any
	// positive integer, and Validate checks their range.
	inRange []string
}

// parseConfigBlock parses the Caddyfile block of a module whose options
// are the fields of the handler Config cfg, each under its JSON name,
// then checks cfg with the Config's Validate, once: the defaults and
// ranges are the Config's. An option is read by its field's type:
//
//   - a duration (duration.Duration): a positive duration;
//   - a rate (float64): a positive number;
//   - a size (an int named *_size): bytes with an optional unit (64KiB),
//     in the range Validate holds it to;
//   - a count (another int): a positive integer;
//   - a name (string): one value; a list ([]string): one or more.
//
// block starts the errors, as caddyglue.ParseModuleBlock's. Validate's
// error is at the line of the option it names (caddyglue.ParseConfigBlock).
func parseConfigBlock[C any, P validated[C]](d *caddyfile.Dispenser, block string, cfg P, syntax blockSyntax) error {
	fields := reflect.ValueOf(cfg).Elem()
	return caddyglue.ParseConfigBlock(d, block, syntax.repeatable, nil, func(opt string) error {
		field := caddyglue.ConfigField(fields, opt)
		if !field.IsValid() {
			return caddyglue.UnknownOption(d, block, opt)
		}
		return parseConfigOption[C, P](d, opt, field, slices.Contains(syntax.inRange, opt))
	}, cfg.Validate)
}

// parseConfigOption reads the value of option opt into field, a field of
// a C (see parseConfigBlock).
func parseConfigOption[C any, P validated[C]](d *caddyfile.Dispenser, opt string, field reflect.Value, inRange bool) error {
	var v any
	var err error
	switch field.Interface().(type) {
	case duration.Duration:
		v, err = caddyglue.ParseConfigDuration(d)
	case float64:
		v, err = caddyglue.ParsePositiveFloat(d)
	case int:
		size := strings.HasSuffix(opt, "_size")
		r := caddyglue.PositiveRange
		if inRange || size {
			r = caddyglue.ConfigRange[C, P](opt)
		}
		if size {
			v, err = caddyglue.ParseSize[int](d, r)
		} else {
			v, err = caddyglue.ParseIntIn(d, r)
		}
	case string:
		v, err = caddyglue.ParseSingleArg(d)
	case []string:
		var values []string
		values, err = caddyglue.ParseArgs(d)
		v = append(field.Interface().([]string), values...)
	default:
		return d.Errf("option '%s' cannot be set in a Caddyfile: use JSON", opt)
	}
	if err == nil {
		field.Set(reflect.ValueOf(v))
	}
	return err
}
