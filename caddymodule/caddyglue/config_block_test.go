package caddyglue

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/internal/bounds"
)

// ParseConfigBlock reads every option, validates the block once, and
// reports the error at the line of the option it is about, or of the
// module when it names no option given.
func TestParseConfigBlockValidatesOnceAtTheOptionsLine(t *testing.T) {
	const block = `probe {
	rate 5
	source_key ip_port
	client_ipv6_prefix 48
	max_allocations 10
	max_allocations_per_client 20
	tag a
	tag b
}`
	for _, tc := range []struct {
		name  string
		err   error
		wantL int // 0: no error
	}{
		{"valid", nil, 0},
		{"cross-field, named first", errors.New("client_ipv6_prefix applies to source_key ip: with ip_port a source is one address and port"), 4},
		{"range error", fmt.Errorf("limits: %w", &bounds.RangeError{Name: "rate", Lo: 1, Hi: 2, Value: 5}), 2},
		{"whole word, not a prefix", errors.New("max_allocations_per_client must be in [1, max_allocations (10)], not 20"), 6},
		{"an option not given, then one given", errors.New("burst 5 at rate 1e-09 per second: must refill within 90 years"), 2},
		{"no option given", errors.New("public_address is required"), 1},
		{"repeatable option: its first line", errors.New("tag must be unique"), 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var read []string
			d := caddyfile.NewTestDispenser(block)
			err := ParseConfigBlock(d, "probe", []string{"tag"}, nil, func(opt string) error {
				read = append(read, opt)
				d.RemainingArgs()
				return nil
			}, func() error {
				calls++
				if len(read) != 7 {
					t.Errorf("validated after %d options, want all 7 read first", len(read))
				}
				return tc.err
			})
			if calls != 1 {
				t.Errorf("validated %d times, want once", calls)
			}
			if tc.wantL == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			want := fmt.Sprintf("probe: %v, at Testfile:%d", tc.err, tc.wantL)
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("got %v, want it to wrap %v", err, tc.err)
			}
		})
	}
}

// A block that fails to parse is not validated.
func TestParseConfigBlockParseErrorFirst(t *testing.T) {
	d := caddyfile.NewTestDispenser("probe {\n\tbogus 1\n}")
	err := ParseConfigBlock(d, "probe", nil, nil, func(opt string) error {
		return UnknownOption(d, "probe", opt)
	}, func() error {
		t.Error("validated a block that did not parse")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "probe: unrecognized option 'bogus', at Testfile:2") {
		t.Fatalf("got %v", err)
	}
}

func TestOptionNamed(t *testing.T) {
	names := []string{"rate", "burst", "max_allocations", "max_allocations_per_client"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("burst 0: must be at least 1 when rate is set"), "burst"},
		{errors.New("max_allocations_per_client must be in [1, max_allocations (5)], not 9"), "max_allocations_per_client"},
		{errors.New("max_allocations must be in [1, 1000000], not 0"), "max_allocations"},
		{errors.New("separate: nothing of ours"), ""},
		{errors.New("ratelimit 5"), ""}, // rate only inside a longer word
		{&bounds.RangeError{Name: "burst", Lo: 1, Hi: 9, Value: 10}, "burst"},
		{&bounds.RangeError{Name: "other", Lo: 1, Hi: 9, Value: 10}, ""},
	} {
		if got := OptionNamed(tc.err, names); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.err, got, tc.want)
		}
	}
}
