package minecraft

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

func TestParseResolver(t *testing.T) {
	for _, c := range []struct {
		in, network, addr, err string
	}{
		{"192.0.2.53", "udp", "192.0.2.53:53", ""},
		{"192.0.2.53:5353", "udp", "192.0.2.53:5353", ""},
		{"tcp/192.0.2.53:53", "tcp", "192.0.2.53:53", ""},
		{"[2001:db8::53]:53", "udp", "[2001:db8::53]:53", ""},
		{"2001:db8::53", "udp", "[2001:db8::53]:53", ""},
		{"192.0.2.53:0", "", "", "want one port"},
		{"192.0.2.53:53-54", "", "", "want one port"},
		{"sctp/192.0.2.53", "", "", `network "sctp" is neither udp nor tcp`},
		{"dns.example.net", "", "", "want an IP address"},
	} {
		t.Run(c.in, func(t *testing.T) {
			network, addr, err := ParseResolver(c.in)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("got %v, want error %q", err, c.err)
				}
				return
			}
			if err != nil || network != c.network || addr != netip.MustParseAddrPort(c.addr) {
				t.Fatalf("got %s %s %v, want %s %s", network, addr, err, c.network, c.addr)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	testutil.CheckValidate(t, []testutil.ValidateCase{
		{Name: "defaults", Validate: (&Config{}).Validate, Want: ""},
		{Name: "at the bounds", Validate: (&Config{Timeout: duration.Duration(time.Hour), ProtocolVersion: -1, Resolvers: []string{"192.0.2.53"}}).Validate, Want: ""},
		{Name: "timeout", Validate: (&Config{Timeout: duration.Duration(2 * time.Hour)}).Validate, Want: "timeout must be a duration in [1ms, 1h0m0s]"},
		{Name: "protocol_version", Validate: (&Config{ProtocolVersion: -2}).Validate, Want: "protocol_version must be in [-1, 1073741824], not -2"},
		{Name: "resolvers", Validate: (&Config{Resolvers: []string{"192.0.2.53:0"}}).Validate, Want: `resolvers: "192.0.2.53:0": want one port`},
	})
}

func TestConfigNewProtocol(t *testing.T) {
	off := false
	p, err := (&Config{Legacy: &off, IncludeFavicon: true, Resolvers: []string{"192.0.2.53", "bad"}}).NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	j := p.(*JavaProtocol)
	if j.Legacy || !j.IncludeFavicon || j.Resolver == nil {
		t.Errorf("got legacy %v, include_favicon %v, resolver %v; want off, on, set", j.Legacy, j.IncludeFavicon, j.Resolver)
	}
	p, err = (&Config{}).NewProtocol()
	if j := p.(*JavaProtocol); err != nil || !j.Legacy || j.Resolver != nil {
		t.Errorf("zero configuration: got %+v, %v; want legacy on and the system's resolver", p, err)
	}
}
