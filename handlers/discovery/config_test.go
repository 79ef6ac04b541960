package discovery

import (
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
)

// Each duration option accepts zero (its default), its shortest and its
// longest value (as documented, not as the constants say), and refuses one
// past either end by name.
func TestConfigDurationBounds(t *testing.T) {
	for _, tc := range []struct {
		field  string
		lo, hi time.Duration
		set    func(d time.Duration) Config
	}{
		{"file_poll", 100 * time.Millisecond, 24 * time.Hour, func(d time.Duration) Config { return Config{FilePoll: duration.Duration(d)} }},
		{"max_age", time.Second, 24 * time.Hour, func(d time.Duration) Config { return Config{MaxAge: duration.Duration(d)} }},
		{"health_check interval", 100 * time.Millisecond, 24 * time.Hour, func(d time.Duration) Config {
			return Config{Health: &HealthConfig{Interval: duration.Duration(d)}}
		}},
		{"health_check wait", time.Millisecond, time.Hour, func(d time.Duration) Config { return Config{Health: &HealthConfig{Wait: duration.Duration(d)}} }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			for _, d := range []time.Duration{0, tc.lo, tc.hi} {
				if err := tc.set(d).Validate(); err != nil {
					t.Errorf("%s %v: got %v, want it accepted", tc.field, d, err)
				}
			}
			for _, d := range []time.Duration{tc.lo - 1, tc.hi + 1, -time.Second} {
				if d == 0 {
					continue
				}
				err := tc.set(d).Validate()
				if err == nil || !strings.HasPrefix(err.Error(), tc.field+" must be a duration in [") {
					t.Errorf("%s %v: got %v, want an error naming %s and its range", tc.field, d, err, tc.field)
				}
			}
		})
	}
}

// Inline fleets are served without repeated servers, as the discovery
// contract promises; a Config that names no handler is DefaultName's.
func TestConfigFleetsAndName(t *testing.T) {
	s := ConfiguredServer(seedServers[0])
	svc, err := NewService(Config{Fleets: map[string][]ConfiguredServer{"f": {s, s}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := get(svc, "f").Body.String(), string(Render(seedServers[:1], BothNames)); got != want {
		t.Errorf("served %s, want %s", got, want)
	}
	if got := (Config{}).WithDefaults().Name; got != DefaultName {
		t.Errorf("name %q, want %q", got, DefaultName)
	}
	if got := (Config{Name: "eu"}).WithDefaults().Name; got != "eu" {
		t.Errorf("name %q, want eu", got)
	}
}

// The name is a path segment of the admin API (/qos-discovery/{name}/fleets)
// and a part of the shared store's keys and of metric labels: one the API
// cannot reach, or without bound, is refused, not served unreachable.
func TestConfigNameChecked(t *testing.T) {
	for _, name := range []string{"", "default", "eu-west", "eu west", strings.Repeat("n", MaxNameLength)} {
		if err := (Config{Name: name}).Validate(); err != nil {
			t.Errorf("name %q: got %v, want it accepted", name, err)
		}
	}
	for _, name := range []string{"eu/west", "a\x00", "a\x7f", strings.Repeat("n", MaxNameLength+1)} {
		if err := (Config{Name: name}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "name ") {
			t.Errorf("name %q: got %v, want an error naming name", name, err)
		}
	}
}
