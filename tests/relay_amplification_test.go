package tests

import (
	"bytes"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// TestRelayNeverAmplifies holds the relay to its rule for addresses that
// have not proven themselves. A token holder that binds its allocation at
// a victim's address (here: from the victim's socket, as a forged source
// would) and relays 1,000 messages of the largest content there gets them
// forwarded byte for byte, never more; binding proves no address, by
// design (docs/security.md). And an address that is not bound gets, for
// each datagram, at most an ERROR no longer than that datagram: nothing
// for one shorter than an ERROR.
func TestRelayNeverAmplifies(t *testing.T) {
	env := startUDPApp(t, "")
	hostAlloc, hostData := env.allocation(t, 1)
	victim := testutil.DialUDP(t, "127.0.0.77:0", env.addr)
	if b := firstReply(t, victim, rawBind(t, hostAlloc, hostData, 0)); !bytes.Equal(b, bindReceived) {
		t.Fatalf("the forged BIND: got %x, want BIND_RECEIVED", b)
	}
	joiner, _, _ := env.dial(t, 1)
	if _, err := connectTo(t, joiner, hostData); err != nil {
		t.Fatal(err)
	}
	const messages = 1000
	content := bytes.Repeat([]byte{0x5a}, wirerelay.DefaultMaxRelayContent)
	relayLen := (&wirerelay.Relay{Content: content}).Len()
	received, receivedBytes := 0, 0
	for i := range messages {
		if err := joiner.Send(hostAlloc.ID, content); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 { // take them in as they come, so the victim's buffer drops none
			for received <= i {
				b, ok := victim.Recv(time.Second)
				if !ok {
					break
				}
				received++
				receivedBytes += len(b)
				if len(b) > relayLen {
					t.Fatalf("the victim got %d bytes for a RELAY of %d", len(b), relayLen)
				}
			}
		}
	}
	if received > messages || receivedBytes > messages*relayLen {
		t.Fatalf("the victim got %d datagrams, %d bytes, for %d RELAYs of %d bytes: more than was sent", received, receivedBytes, messages, relayLen)
	}
	if received < messages/2 {
		t.Fatalf("the victim got %d of %d RELAYs: the forged binding did not take the traffic", received, messages)
	}

	// Unbound sources, one datagram each: every reply at most an ERROR
	// no longer than the datagram.
	var id wirerelay.AllocationID
	id[0] = 0x42
	enc := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	badBind := rawBind(t, hostAlloc, hostData, 9)
	badBind[100] ^= 1
	errLen := (&wirerelay.Error{}).Len()
	for _, tc := range []struct {
		name    string
		d       []byte
		answers bool
	}{
		{"RELAY of an unbound allocation", enc((&wirerelay.Relay{From: id, To: id, Content: content}).AppendTo(nil)), true},
		{"empty RELAY of an unbound allocation", enc((&wirerelay.Relay{From: id, To: id}).AppendTo(nil)), true},
		{"PING of an unbound allocation", enc((&wirerelay.Ping{AllocationID: id, Number: 1}).AppendTo(nil)), true},
		{"CONNECT_REQUEST with data that does not open", enc((&wirerelay.ConnectRequest{AllocationID: id, ToConnectionData: []byte("not sealed")}).AppendTo(nil)), true},
		{"DISCONNECT of an unbound allocation", enc((&wirerelay.Disconnect{From: id, To: id}).AppendTo(nil)), true},
		{"a header of another version", []byte{0xDA, 0x72, 0x01, byte(wirerelay.TypePing)}, false},
		{"a header of another version with an allocation", append([]byte{0xDA, 0x72, 0x01, byte(wirerelay.TypePing)}, id[:]...), false},
		{"BIND with a bad HMAC", badBind, false},
		{"CLOSE of an unbound allocation", enc((&wirerelay.Close{AllocationID: id}).AppendTo(nil)), false},
	} {
		c := testutil.DialUDP(t, "127.0.0.78:0", env.addr)
		c.Send(tc.d)
		b, ok := c.Recv(300 * time.Millisecond)
		switch {
		case ok && len(b) > len(tc.d):
			t.Errorf("%s (%d bytes): answered with %d bytes", tc.name, len(tc.d), len(b))
		case ok && (len(b) != errLen || b[3] != byte(wirerelay.TypeError)):
			t.Errorf("%s: answered %x, want at most an ERROR", tc.name, b)
		case ok != tc.answers:
			t.Errorf("%s (%d bytes): answered %v, want %v", tc.name, len(tc.d), ok, tc.answers)
		}
	}
	t.Logf("%d RELAYs of %d bytes to a forged binding: the victim got %d datagrams, %d bytes (sent: %d bytes); unbound sources got at most an ERROR no longer than their datagram",
		messages, relayLen, received, receivedBytes, messages*relayLen)
}
