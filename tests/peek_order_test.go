package tests

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// A QoS request whose last byte is EOT, as one timestamp in 256 ends, is
// answered by QoS on a port that lists GQP first: the GQP peek does not
// claim it.
func TestQoSRequestEndingInEOTBeforeGQP(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	gamegate {
		udp %s {
			gqp {
				identify order-test 1.0 1
				command motd {
					record message hello
				}
			}
			qos {
				rate 100
				burst 100
			}
		}
	}
}
`, addr))
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)

	// Title "QoS request", then sequence, identifier and a millisecond
	// timestamp whose most significant byte, last on the wire, is 0x04.
	custom := []byte{3, 0xef, 0xbe, 0x7b, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x04}
	req, err := (&wireqos.Request{Title: []byte("QoS request"), Custom: custom}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if req[len(req)-1] != wiregqp.EOT {
		t.Fatalf("request % x does not end with EOT", req)
	}
	c.Send(req)
	b, ok := c.Recv(replyTimeout)
	if !ok {
		t.Fatal("no answer to the QoS request")
	}
	var resp wireqos.Response
	if err := resp.Decode(b); err != nil || !bytes.Equal(resp.Custom, custom) {
		t.Fatalf("answer % x is not the QoS echo of % x (%v)", b, custom, err)
	}

	// The same port still answers GQP.
	if r := gqpExchange(t, c, "motd"); string(r.Replies[0].Name) != "motd" {
		t.Fatalf("GQP answer names %q, want motd", r.Replies[0].Name)
	}
}
