package qos

import (
	"context"
	"net/netip"
	"testing"
)

func TestParseTargets(t *testing.T) {
	got, err := ParseTargets(context.Background(), []string{"eu-west=127.0.0.1:9000", "[::1]:9001", "us=localhost:9002"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Region: "eu-west", Addr: netip.MustParseAddrPort("127.0.0.1:9000")},
		{Region: "[::1]:9001", Addr: netip.MustParseAddrPort("[::1]:9001")},
		{Region: "us", Addr: got[2].Addr},
	}
	for i := range want {
		if got[i].Region != want[i].Region || got[i].Addr != want[i].Addr {
			t.Fatalf("target %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if !got[2].Addr.Addr().IsLoopback() || got[2].Addr.Port() != 9002 {
		t.Fatalf("localhost target: got %v, want a loopback address on 9002", got[2].Addr)
	}
	for _, bad := range []string{"nohost", "r=1.2.3.4", "r=1.2.3.4:0", "r=1.2.3.4:x"} {
		if _, err := ParseTargets(context.Background(), []string{bad}); err == nil {
			t.Fatalf("%q: got nil error, want one", bad)
		}
	}
}
