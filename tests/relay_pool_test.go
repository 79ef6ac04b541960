package tests

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Two relays that share a name but not their timeouts keep separate tables,
// each with its own timeouts: neither runs with the other's.
func TestRelaySameNameDifferentTimeouts(t *testing.T) {
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	short, long := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			route {
				relay {
					secrets {env.GAMEGATE_TEST_RELAY_SECRET}
					idle_timeout 300ms
					alone_timeout 300ms
					name shared
				}
			}
		}
		udp/%s {
			route {
				relay {
					secrets {env.GAMEGATE_TEST_RELAY_SECRET}
					name shared
				}
			}
		}
	}
}`, short, long))
	sealer, err := relay.NewSealer([]byte(relaySecret))
	if err != nil {
		t.Fatal(err)
	}
	bindAt := func(addr string) (*testutil.UDPClient, []byte) {
		a, err := relay.NewAllocation(1, "test", time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		data, err := sealer.Seal(a)
		if err != nil {
			t.Fatal(err)
		}
		c := testutil.DialUDP(t, "127.0.0.1:0", addr)
		if got := firstReply(t, c, rawBind(t, a, data, 0)); !bytes.Equal(got, bindReceived) {
			t.Fatalf("BIND at %s: got %x", addr, got)
		}
		ping, _ := (&wirerelay.Ping{AllocationID: a.ID}).AppendTo(nil)
		return c, ping
	}
	cs, pingS := bindAt(short)
	cl, pingL := bindAt(long)
	time.Sleep(600 * time.Millisecond) // silent past the short timeout only
	var e wirerelay.Error
	if got := firstReply(t, cs, pingS); e.Decode(got) != nil || e.Code != wirerelay.CodeTimeout {
		t.Fatalf("relay with 300ms timeouts, after 600ms: got %x, want ERROR 1", got)
	}
	if got := firstReply(t, cl, pingL); !bytes.Equal(got, pingL) {
		t.Fatalf("relay with default timeouts, after 600ms: got %x, want the PING echoed", got)
	}
}
