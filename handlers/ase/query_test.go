package ase

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

func fixture(t *testing.T) *testutil.ASEServer {
	s := testutil.ExampleASE()
	testutil.StartASE(t, s)
	return s
}

func TestStatus(t *testing.T) {
	s := fixture(t)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := strings.Cut(s.Addr, ":")
	if st.Name != s.Name || st.Map != s.Map || st.Version != "1.6" || !st.Password || st.NumPlayers != 3 || st.MaxPlayers != 32 ||
		st.Connect != host+":22003" || st.Address != s.Addr || st.Protocol != "ase" {
		t.Errorf("status: got %+v", st)
	}
	if st.Raw["gamename"] != "mta" || st.Raw["gametype"] != "Freeroam" || st.Raw["mode"] != "râce" || len(st.Raw) != 4 {
		t.Errorf("raw: got %v", st.Raw)
	}
	if len(st.Players) != 3 || len(st.Bots) != 0 {
		t.Fatalf("players: got %+v, bots %+v", st.Players, st.Bots)
	}
	zoe, bob := st.Players[0], st.Players[1]
	if zoe.Name != "Zoë" || zoe.Raw["team"] != "Red" || zoe.Raw["skin"] != "cj" || zoe.Raw["score"] != 12 || zoe.Raw["ping"] != 40 || zoe.Raw["time"] != 300 {
		t.Errorf("player 0: got %+v", zoe)
	}
	if bob.Name != "Bob" || bob.Raw["score"] != -3 || bob.Raw["ping"] != 55 || len(bob.Raw) != 2 {
		t.Errorf("player 1 (name, score and ping only): got %+v", bob)
	}
}

// A datagram that is not an answer is dropped; the answer after it is
// taken.
func TestStatusDropsOtherDatagrams(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		return [][]byte{[]byte("EYE2junk"), []byte("EYE1\x05ab"), []byte("EYE1\x01\x01\x01\x01\x01\x01\x021\x01\x01")}
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), addr.String())
	if err != nil || !st.Password {
		t.Fatalf("got %+v, %v; want the third datagram's status", st, err)
	}
}

func TestStatusTimeout(t *testing.T) {
	addr := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return [][]byte{[]byte("EYE1\x05a")} })
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 50 * time.Millisecond, Retries: -1}}
	_, err := p.Status(context.Background(), addr.String())
	var qe *query.Error
	if !errors.As(err, &qe) || qe.HTTPStatus != http.StatusGatewayTimeout {
		t.Fatalf("got %v, want a timeout", err)
	}
	if _, err := p.Command(context.Background(), addr.String(), "players", nil); query.HTTPStatus(err) != http.StatusNotFound {
		t.Errorf("command: got %v, want 404", err)
	}
}
