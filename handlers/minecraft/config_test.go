package minecraft

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
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
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"defaults", Config{}, ""},
		{"at the bounds", Config{Timeout: duration.Duration(time.Hour), ProtocolVersion: -1, Resolvers: []string{"192.0.2.53"}}, ""},
		{"timeout", Config{Timeout: duration.Duration(2 * time.Hour)}, "timeout must be a duration in [1ms, 1h0m0s]"},
		{"protocol_version", Config{ProtocolVersion: -2}, "protocol_version must be in [-1, 1073741824], not -2"},
		{"resolvers", Config{Resolvers: []string{"192.0.2.53:0"}}, `resolvers: "192.0.2.53:0": want one port`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
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
