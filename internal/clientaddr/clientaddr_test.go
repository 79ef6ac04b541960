package clientaddr

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		addr string
		bits int
		want string
	}{
		{"192.0.2.7", 0, "192.0.2.7/32"},
		{"192.0.2.7", 48, "192.0.2.7/32"}, // IPv4 ignores the IPv6 prefix
		{"::ffff:192.0.2.7", 0, "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", 0, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", 0, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 56, "2001:db8:1::/56"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
		{"fe80::1%eth0", 0, "fe80::/64"},
		{"::1", 0, "::/64"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := Key(netip.MustParseAddr(tc.addr), tc.bits); got.String() != tc.want {
				t.Errorf("Key(%s, %d) = %v, want %s", tc.addr, tc.bits, got, tc.want)
			}
		})
	}
	if got := Key(netip.Addr{}, 0); got.IsValid() {
		t.Errorf("Key(invalid) = %v, want the zero Prefix", got)
	}
}

// Every address of one /64 is one client; the next /64 is another.
func TestKeyOnePrefixIsOneClient(t *testing.T) {
	base := netip.MustParseAddr("2001:db8:aa:bb::")
	want := Key(base, 0)
	a := base.As16()
	for i := range 1000 {
		a[8], a[15] = byte(i), byte(i*7)
		if got := Key(netip.AddrFrom16(a), 0); got != want {
			t.Fatalf("Key(%v) = %v, want %v", netip.AddrFrom16(a), got, want)
		}
	}
	a[7]++
	if got := Key(netip.AddrFrom16(a), 0); got == want {
		t.Fatalf("Key(%v) = %v: the next /64 must be another client", netip.AddrFrom16(a), got)
	}
}

func TestKeyString(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		bits int
		want string
	}{
		{"192.0.2.7", 0, "192.0.2.7"},
		{"::ffff:192.0.2.7", 0, "192.0.2.7"},
		{"2001:db8::1", 0, "2001:db8::/64"},
		{"2001:db8:0:ff::1", 48, "2001:db8::/48"},
		{"not an address", 0, "unknown"},
	} {
		a, _ := netip.ParseAddr(tc.ip)
		if got := KeyString(a, tc.bits); got != tc.want {
			t.Errorf("KeyString(%q, %d) = %q, want %q", tc.ip, tc.bits, got, tc.want)
		}
	}
}

func TestValidateIPv6Prefix(t *testing.T) {
	for _, ok := range []int{0, 32, 48, 56, 64, 128} {
		if err := ValidateIPv6Prefix("client_ipv6_prefix", ok); err != nil {
			t.Errorf("ValidateIPv6Prefix(%d) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []int{-1, 1, 31, 129} {
		if err := ValidateIPv6Prefix("client_ipv6_prefix", bad); err == nil {
			t.Errorf("ValidateIPv6Prefix(%d) = nil, want an error", bad)
		}
	}
}

func TestNetworkString(t *testing.T) {
	for _, tc := range []struct {
		ip           string
		bits4, bits6 int
		want         string
	}{
		{"192.0.2.7", 0, 0, "192.0.2.0/24"},
		{"::ffff:192.0.2.7", 0, 0, "192.0.2.0/24"},
		{"192.0.2.7", 16, 0, "192.0.0.0/16"},
		{"192.0.2.7", 32, 0, "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", 0, 0, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 0, 56, "2001:db8:1::/56"},
		{"fe80::1%eth0", 0, 0, "fe80::/48"},
		{"not an address", 0, 0, "unknown"},
	} {
		a, _ := netip.ParseAddr(tc.ip)
		if got := NetworkString(a, tc.bits4, tc.bits6); got != tc.want {
			t.Errorf("NetworkString(%q, %d, %d) = %q, want %q", tc.ip, tc.bits4, tc.bits6, got, tc.want)
		}
	}
	for _, bad := range []int{-1, 7, 33} {
		if ValidateNetworkIPv4Prefix("network_ipv4_prefix", bad) == nil {
			t.Errorf("ValidateNetworkIPv4Prefix(%d) = nil, want an error", bad)
		}
	}
}
