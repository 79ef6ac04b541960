package caddyapp

import "testing"

// Two listen addresses overlap when the kernel would hand one port's
// datagrams to either socket.
func TestListenOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:9000", "127.0.0.1:9000", true},
		{"127.0.0.1:9000", "127.0.0.1:9001", false},
		{"127.0.0.1:9000-9010", "127.0.0.1:9010", true},
		{":9000", "127.0.0.1:9000", true},
		{":9000", "[::]:9000", true},
		{"0.0.0.0:9000", "127.0.0.1:9000", true},
		{"0.0.0.0:9000", "[::1]:9000", false},
		{"[::]:9000", "127.0.0.1:9000", true}, // dual stack
		{"udp6/[::]:9000", "127.0.0.1:9000", false},
		{"udp4/:9000", "udp6/:9000", false},
		{"udp4/:9000", ":9000", true},
		{"127.0.0.1:9000", "127.0.0.2:9000", false},
		{"127.0.0.1:9000", "[::ffff:127.0.0.1]:9000", true},
		{"localhost:9000", "LOCALHOST.:9000", true},
		{"localhost:9000", "127.0.0.1:9000", false}, // a name is not resolved here
	} {
		na, err := parseUDPListen(tc.a)
		if err != nil {
			t.Fatalf("%s: %v", tc.a, err)
		}
		nb, err := parseUDPListen(tc.b)
		if err != nil {
			t.Fatalf("%s: %v", tc.b, err)
		}
		got := checkOverlap([]udpListen{{na, tc.a}}, nb, tc.b) != nil
		if got != tc.want {
			t.Errorf("%s and %s: overlap %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
