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
	if r := configRangeError[C, P](opt); r != nil {
		return IntRange{Lo: r.Lo, Hi: r.Hi}
	}
	return IntRange{Lo: math.MinInt64, Hi: math.MaxInt64}
}

// configRangeError is the *bounds.RangeError the Validate of a C returns
// for option opt out of every range, or nil.
func configRangeError[C any, P interface {
	*C
	Validate() error
}](opt string) *bounds.RangeError {
	return ProbeRange[C, P](opt, math.MaxInt64)
}

// ProbeRange returns the *bounds.RangeError the Validate of a C returns
// with its integer option opt at v (at math.MaxInt32 if v overflows the
// field) and every other option at its default, if that error is about
// opt; nil otherwise, or if opt is no integer option of a C.
func ProbeRange[C any, P interface {
	*C
	Validate() error
}](opt string, v int64) *bounds.RangeError {
	probe := new(C)
	field := ConfigField(reflect.ValueOf(probe).Elem(), opt)
	if !field.IsValid() || !field.CanInt() {
		return nil
	}
	if field.OverflowInt(v) {
		v = math.MaxInt32
	}
	field.SetInt(v)
	var r *bounds.RangeError
	if errors.As(P(probe).Validate(), &r) && r.Name == opt {
		return r
	}
	return nil
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
// Caddyfile parser reads it in. An option without a lower bound of its
// own (bounds.MinDuration, raised) reads from 0: ParseDurationIn refuses
// less than bounds.MinDuration on its own, with a hint.
func ConfigDurationRange[C any, P interface {
	*C
	Validate() error
}](opt string) DurationRange {
	r := configRangeError[C, P](opt)
	switch {
	case r == nil:
		return DurationRange{Lo: 0, Hi: math.MaxInt64}
	case r.Raised:
		return DurationRange{Lo: 0, Hi: time.Duration(r.Hi)}
	}
	return DurationRange{Lo: time.Duration(r.Lo), Hi: time.Duration(r.Hi)}
}
