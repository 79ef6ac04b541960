package gamespy2

import (
	"context"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	wiregs2 "github.com/gamegate/gamegate/wire/gamespy2"
)

// Answers carrying another request's ID are dropped; a table without its
// row count byte (America's Army) is read; an empty number is left out.
func TestStatus(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		id := binary.BigEndian.Uint32(req[3:7])
		var body string
		switch {
		case req[7] == 0xFF:
			body = "hostname\x00AA\x00password\x00Yes\x00hostport\x001716\x00\x00\x00"
		case req[8] == 0xFF:
			body = "\x00player_\x00score_\x00ping_\x00\x00Ann\x00\x0030\x00Bo\x007\x0040\x00"
		default:
			body = "\x00\x00" // no teams
		}
		return [][]byte{
			wiregs2.AppendAnswer(nil, id+1, []byte("hostname\x00forged\x00\x00")),
			wiregs2.AppendAnswer(nil, id, []byte(body)),
		}
	})
	p, _ := (&Config{}).NewProtocol()
	st, err := p.Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "AA" || !st.Password || st.Connect != "127.0.0.1:1716" || st.NumPlayers != 2 || len(st.Players) != 2 {
		t.Fatalf("got %+v", st)
	}
	if _, has := st.Players[0].Raw["score"]; has || st.Players[1].Raw["score"] != 7 || st.Players[0].Raw["ping"] != 30 {
		t.Fatalf("got players %+v", st.Players)
	}
	if teams, _ := st.Raw["teams"].([]map[string]any); len(teams) != 0 {
		t.Fatalf("got teams %v", st.Raw["teams"])
	}
}
