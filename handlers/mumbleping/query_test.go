package mumbleping

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wiremp "github.com/gamegate/gamegate/wire/mumbleping"
)

// serve answers pings as Murmur does, after first sending a pong with
// another ident (a late or spoofed answer, which must be dropped).
func serve(t *testing.T, pong wiremp.Pong) netip.AddrPort {
	return testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var ping wiremp.Ping
		if ping.Decode(req) != nil {
			return nil
		}
		wrong := pong
		wrong.Ident, wrong.Users = ping.Ident+1, 99
		a, _ := wrong.AppendTo(nil)
		pong.Ident = ping.Ident
		b, _ := pong.AppendTo(nil)
		return [][]byte{a, b}
	})
}

func TestStatus(t *testing.T) {
	addr := serve(t, wiremp.Pong{Version: 1<<16 | 3<<8 | 4, Users: 2, MaxUsers: 17, Bandwidth: 72000})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st.Raw)
	if st.Version != "1.3.4" || st.NumPlayers != 2 || st.MaxPlayers != 17 || st.Protocol != "mumbleping" ||
		st.Connect != addr.String() || st.QueryPort != int(addr.Port()) ||
		string(b) != `{"allowedbandwidth":72000,"versionMajor":1,"versionMinor":3,"versionPatch":4}` {
		t.Errorf("got %+v, raw %s", st, b)
	}
}

func TestStatusBadAnswer(t *testing.T) {
	// A server answering with a datagram of another length: no pong, so
	// no answer at all.
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte { return [][]byte{append(req, 0)} })
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 200 * time.Millisecond, Retries: -1}}
	_, err := p.Status(context.Background(), addr.String())
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Kind() != query.TypeTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
	if _, err := p.Command(context.Background(), addr.String(), "players", nil); !errors.As(err, &qe) || qe.HTTPStatus != 404 {
		t.Errorf("command: got %v, want a 404", err)
	}
}

func TestConfig(t *testing.T) {
	c := Config{}
	c.Retries = 11
	if err := c.Validate(); err == nil {
		t.Error("retries 11: no error")
	}
	c.Retries = 2
	p, err := c.NewProtocol()
	if err != nil || p.Name() != "mumbleping" || c.Validate() != nil {
		t.Errorf("got %v, %v", p, err)
	}
}
