package relay

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (the defaults): got %v, want nil", err)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"negative idle timeout", Config{IdleTimeout: duration.Duration(-time.Second)}, "idle_timeout"},
		{"idle timeout past a day", Config{IdleTimeout: duration.Duration(25 * time.Hour)}, "idle_timeout"},
		{"negative alone timeout", Config{AloneTimeout: duration.Duration(-time.Second)}, "alone_timeout"},
		{"max content past 65535", Config{MaxContent: 70000}, "max_content"},
		{"negative max content", Config{MaxContent: -1}, "max_content"},
		{"negative max bindings", Config{MaxBindings: -1}, "max_bindings"},
		{"max bindings past 2^30", Config{MaxBindings: 1<<30 + 1}, "max_bindings"},
		{"unknown nonce order", Config{NonceByteOrder: "middle"}, "nonce_byte_order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+" ") {
				t.Fatalf("got %v, want an error naming %s first", err, tc.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.MaxContent != DefaultMaxContent || c.NonceByteOrder != DefaultNonceByteOrder ||
		c.IdleTimeout.Std() != DefaultIdleTimeout || c.AloneTimeout.Std() != DefaultAloneTimeout || c.MaxBindings != DefaultMaxBindings {
		t.Fatalf("got %+v, want the defaults", c)
	}
	// A table can be made before Validate refuses a value.
	tc := Config{IdleTimeout: duration.Duration(-time.Second), MaxBindings: -5}.TableConfig()
	if tc.IdleTimeout != DefaultIdleTimeout || tc.Limit != DefaultMaxBindings || tc.Sweep != time.Second {
		t.Fatalf("got %+v, want the defaults for values Validate refuses", tc)
	}
	if _, err := NewTable(tc); err != nil {
		t.Fatal(err)
	}
}

// TestServerServeDatagramAllocatesNothing: the app's readers relay without
// allocating once the outbox pool is warm.
func TestServerServeDatagramAllocatesNothing(t *testing.T) {
	sealer, err := NewSealer([]byte("relay-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := NewTable(TableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var verdicts int
	s, err := NewServer(Config{Sealer: sealer, Count: func(Verdict) { verdicts++ }}, table)
	if err != nil {
		t.Fatal(err)
	}
	ping, _ := (&wirerelay.Ping{Number: 1}).AppendTo(nil)
	if !s.Match(ping) || s.Match(ping[:3]) {
		t.Fatal("Match: want a PING matched and a short header refused")
	}
	w := dgram.NewWriter(&dgram.Conn{}) // writes fail, without allocating
	src := netip.MustParseAddrPort("192.0.2.1:1")
	if allocs := testing.AllocsPerRun(1000, func() {
		s.ServeDatagram(w, src, ping)
		w.Flush()
	}); allocs != 0 && !testutil.Race { // the race detector's sync.Pool drops outboxes
		t.Fatalf("got %v allocations per datagram, want 0", allocs)
	}
	if verdicts == 0 {
		t.Fatal("no verdict counted")
	}
}
