package netaddr

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct {
		in       string
		host     string
		port     uint16
		wantErr  error
		anyError bool
	}{
		{in: "example.com:27960", host: "example.com", port: 27960},
		{in: "[::1]:1", host: "::1", port: 1},
		{in: "203.0.113.7:65535", host: "203.0.113.7", port: 65535},
		{in: "203.0.113.7", wantErr: ErrNotHostPort},
		{in: ":7777", wantErr: ErrNoHost},
		{in: "203.0.113.7:0", anyError: true},
		{in: "203.0.113.7:65536", anyError: true},
		{in: "203.0.113.7:x", anyError: true},
		{in: "203.0.113.7:-1", anyError: true},
		{in: "203.0.113.7:+7777", anyError: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			host, port, err := SplitHostPort(tc.in)
			switch {
			case tc.wantErr != nil || tc.anyError:
				if err == nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %q, %d, %v; want error %v", host, port, err, tc.wantErr)
				}
			case err != nil || host != tc.host || port != tc.port:
				t.Fatalf("got %q, %d, %v; want %q, %d", host, port, err, tc.host, tc.port)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	ap, err := Resolve(context.Background(), "[::ffff:127.0.0.1]:9000")
	if err != nil || ap != netip.MustParseAddrPort("127.0.0.1:9000") {
		t.Fatalf("got %v, %v; want 127.0.0.1:9000 (unmapped)", ap, err)
	}
	ap, err = Resolve(context.Background(), "localhost:9002")
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() != 9002 {
		t.Fatalf("got %v, %v; want a loopback address on 9002", ap, err)
	}
	for _, bad := range []string{"nohost", "1.2.3.4:0", "1.2.3.4:x", "host.invalid:1"} {
		if ap, err := Resolve(context.Background(), bad); err == nil {
			t.Fatalf("%q: got %v, want an error", bad, ap)
		}
	}
}

func TestIsHostName(t *testing.T) {
	for in, want := range map[string]bool{
		"mc.example.com":               true,
		"mc.example.com.":              true,
		"localhost":                    true,
		"_minecraft._tcp.a.io":         true,
		"a-b.c":                        true,
		"1.example":                    true,
		"999.1.1.1":                    false, // looks like IPv4, is none
		"203.0.113.7":                  false, // an address, not a name
		"123":                          false,
		"":                             false,
		".":                            false,
		"a..b":                         false,
		"-a.b":                         false,
		"a-.b":                         false,
		"a b":                          false,
		"a:1":                          false,
		"[::1]":                        false,
		strings.Repeat("a", 64) + ".b": false,
		strings.Repeat(strings.Repeat("a", 63)+".", 4) + "b": false, // 257 bytes
	} {
		if got := IsHostName(in); got != want {
			t.Errorf("IsHostName(%q): got %v, want %v", in, got, want)
		}
	}
}

type textAddr string

func (a textAddr) Network() string { return "test" }
func (a textAddr) String() string  { return string(a) }

func TestAddrPortOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   net.Addr
		want netip.AddrPort
	}{
		{"udp4", &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7}, netip.MustParseAddrPort("192.0.2.1:7")},
		{"udp mapped", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("[::ffff:192.0.2.1]:7")), netip.MustParseAddrPort("192.0.2.1:7")},
		{"udp6", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:9")), netip.MustParseAddrPort("[2001:db8::1]:9")},
		{"tcp mapped", net.TCPAddrFromAddrPort(netip.MustParseAddrPort("[::ffff:10.0.0.1]:80")), netip.MustParseAddrPort("10.0.0.1:80")},
		{"text mapped", textAddr("[::ffff:10.0.0.1]:80"), netip.MustParseAddrPort("10.0.0.1:80")},
		{"text not an address", textAddr("pipe"), netip.AddrPort{}},
		{"nil", nil, netip.AddrPort{}},
		{"nil udp", (*net.UDPAddr)(nil), netip.AddrPort{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AddrPortOf(tc.in); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSplitHostOptionalPort(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port uint16
		ok   bool
	}{
		{"192.0.2.1:27960", "192.0.2.1", 27960, true},
		{"192.0.2.1", "192.0.2.1", 0, true},
		{"example.com", "example.com", 0, true},
		{"::1", "::1", 0, true},
		{"[::1]:7777", "::1", 7777, true},
		{"[::1]", "", 0, false},
		{"a b", "", 0, false},
		{"192.0.2.1:0", "", 0, false},
		{":7777", "", 0, false},
		{"", "", 0, false},
	} {
		host, port, err := SplitHostOptionalPort(c.in)
		if (err == nil) != c.ok || host != c.host || port != c.port {
			t.Errorf("SplitHostOptionalPort(%q): got %q, %d, %v; want %q, %d, ok %v", c.in, host, port, err, c.host, c.port, c.ok)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes("allow", []string{"10.1.2.3/8", "192.0.2.7", "2001:db8::1", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("2001:db8::/32")}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "300.1.1.1", "", "example.com"} {
		_, err := ParsePrefixes("allow", []string{"10.0.0.0/8", bad})
		if want := `allow: "` + bad + `" is not a CIDR or IP address`; err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %q", bad, err, want)
		}
	}
}
