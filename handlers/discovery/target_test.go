package discovery

import (
	"net/netip"
	"testing"
)

func TestServerQoSTarget(t *testing.T) {
	both := Server{LocationID: 7, RegionID: "eu", IPv4: "192.0.2.1", IPv6: "2001:db8::1", Port: 9000}
	v4 := Server{RegionID: "us", IPv4: "192.0.2.2", Port: 9001}
	v6 := Server{RegionID: "ap", IPv6: "2001:db8::3", Port: 9002}
	for _, tc := range []struct {
		name string
		s    Server
		ipv6 bool
		want string
	}{
		{"both, IPv4 preferred", both, false, "192.0.2.1:9000"},
		{"both, IPv6 preferred", both, true, "[2001:db8::1]:9000"},
		{"IPv4 only, IPv6 preferred", v4, true, "192.0.2.2:9001"},
		{"IPv6 only", v6, false, "[2001:db8::3]:9002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.QoSTarget(tc.ipv6)
			if got.Addr != netip.MustParseAddrPort(tc.want) || got.Region != tc.s.RegionID || got.LocationID != int(tc.s.LocationID) {
				t.Fatalf("got %+v, want %s in region %s, location %d", got, tc.want, tc.s.RegionID, tc.s.LocationID)
			}
		})
	}
}
