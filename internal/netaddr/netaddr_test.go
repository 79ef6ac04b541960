package netaddr

import (
	"context"
	"errors"
	"net/netip"
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
