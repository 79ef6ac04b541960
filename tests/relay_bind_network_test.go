package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// A token holder allocates from its own address and binds the allocation
// at a victim's (a forged source), so that the relay sends its peers'
// traffic there. By default the relay binds it (the protocol ties an
// allocation to whatever address sends a valid BIND); with
// bind_to_client_network, it binds only from the network that asked for
// the allocation, and the unmodified client, which binds from where it
// called the API, still binds.
func TestRelayBindToClientNetwork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		option string
		forged bool // whether the forged BIND is answered
	}{
		{"default", "max_connections 100", true},
		{"bind_to_client_network", "bind_to_client_network", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relayAddr, httpAddr := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
			t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
			testcaddy.Start(t, fmt.Sprintf(`{
	storage file_system %s
	gamegate {
		udp %s {
			relay {
				secrets {env.GAMEGATE_TEST_RELAY_SECRET}
			}
		}
	}
}
http://%s {
	relay_allocations {
		secrets {env.GAMEGATE_TEST_RELAY_SECRET}
		tokens %s
		public_address %s
		%s
	}
}
`, t.TempDir(), relayAddr, httpAddr, relayAPITokenLong, relayAddr, tc.option))
			// The host asks for its allocation from 127.90.0.1.
			req, err := http.NewRequest("POST", "http://"+httpAddr+"/v1/allocate", strings.NewReader(`{"maxConnections": 2}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+relayAPITokenLong)
			req.Header.Set("Content-Type", "application/json")
			resp, err := clientFrom("127.90.0.1").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var answer struct {
				Data struct {
					Allocation unityAllocation `json:"allocation"`
				} `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("allocate: %d %v", resp.StatusCode, err)
			}
			got := answer.Data.Allocation
			a := &relay.Allocation{ID: wirerelay.AllocationID(got.AllocationIDBytes)}
			copy(a.Key[:], got.Key)

			// The forged BIND, from the victim's address outside the host's /24.
			victim := testutil.DialUDP(t, "127.91.0.1:0", relayAddr)
			victim.Send(rawBind(t, a, got.ConnectionData, 0))
			b, answered := victim.Recv(time.Second)
			if answered != tc.forged || answered && !bytes.Equal(b, bindReceived) {
				t.Fatalf("BIND from outside the allocating client's network: answered %v (%x), want %v", answered, b, tc.forged)
			}
			// The client binds from its own network (another address and port
			// of it: a NAT may change both), with the next nonce.
			host := testutil.DialUDP(t, "127.90.0.2:0", relayAddr)
			if b := firstReply(t, host, rawBind(t, a, got.ConnectionData, 1)); !bytes.Equal(b, bindReceived) {
				t.Fatalf("BIND from the allocating client's network: got %x, want BIND_RECEIVED", b)
			}
		})
	}
}
