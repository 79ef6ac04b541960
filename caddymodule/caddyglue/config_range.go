package caddyglue

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
)

// ConfigRange returns the range the Validate of a handler's Config C
// holds its integer option opt (by JSON name) to, read from the
// *bounds.RangeError Validate returns for a value out of every range, the
// other options at their defaults: a Caddyfile parser reads the option in
// that range, so its error keeps the option's line, without stating the
// range again. An option Validate does not range (or not with bounds)
// gets every integer.
func ConfigRange[C any, P interface {
	*C
	Validate() error
}](opt string) IntRange {
	probe := new(C)
	field := ConfigField(reflect.ValueOf(probe).Elem(), opt)
	if !field.IsValid() || !field.CanInt() {
		return IntRange{Lo: math.MinInt64, Hi: math.MaxInt64}
	}
	v := int64(math.MaxInt64)
	if field.OverflowInt(v) {
		v = math.MaxInt32
	}
	field.SetInt(v)
	var r *bounds.RangeError
	if errors.As(P(probe).Validate(), &r) && r.Name == opt {
		return IntRange{Lo: r.Lo, Hi: r.Hi}
	}
	return IntRange{Lo: math.MinInt64, Hi: math.MaxInt64}
}

// ConfigField returns the field of cfg (a struct) whose JSON key is name,
// looking into embedded structs, or the zero Value.
func ConfigField(cfg reflect.Value, name string) reflect.Value {
	for _, f := range reflect.VisibleFields(cfg.Type()) {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && key == name && name != "" && name != "-" {
			return cfg.FieldByIndex(f.Index)
		}
	}
	return reflect.Value{}
}

// ConfigDurationRange is ConfigRange for a duration option: the range a
// Caddyfile parser reads it in. A lower bound of bounds.MinDuration, which
// every duration option has, reads as 0: ParseDurationIn refuses less
// than bounds.MinDuration on its own, with a hint.
func ConfigDurationRange[C any, P interface {
	*C
	Validate() error
}](opt string) DurationRange {
	r := ConfigRange[C, P](opt)
	if r.Lo <= int64(bounds.MinDuration) {
		r.Lo = 0
	}
	return DurationRange{Lo: time.Duration(r.Lo), Hi: time.Duration(r.Hi)}
}
