package doom3

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

func TestStatus(t *testing.T) {
	s := testutil.ExampleDoom3()
	testutil.StartDoom3(t, s)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte Doom" || st.Map != "game/mp/d3dm1" || st.MaxPlayers != 8 || !st.Password || st.Version != "1.41" ||
		st.NumPlayers != 3 || st.Connect != s.Addr || st.Raw["si_name"] != "Gâte Doom" || st.Raw["osmask"] != uint32(1) {
		t.Errorf("status: got %+v", st)
	}
	if got := fmt.Sprint(st.Players, st.Bots); got != "[{Alice map[id:0 ping:50 rate:16384]} {Zoë map[id:3 ping:80 rate:25000]}] [{Bot map[id:1 ping:0 rate:0]}]" {
		t.Errorf("players, bots: got %s", got)
	}
}

// An answer that does not echo the query's challenge is dropped.
func TestStatusWantsItsChallenge(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		return [][]byte{[]byte("\xff\xffinfoResponse\x00\x01\x02\x03\x04\x29\x00\x01\x00si_name\x00x\x00\x00\x00\x20\x01\x00\x00\x00")}
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 100 * time.Millisecond, Retries: -1}}
	if _, err := p.Status(context.Background(), addr.String()); query.HTTPStatus(err) != http.StatusGatewayTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
}

// An ETQW answer (the codec's vector, its challenge replaced by the
// query's): no rate, clan tags, bots by type flag, ETQW's fields.
func TestStatusETQW(t *testing.T) {
	vector := testutil.VectorsByName(t, "../../wire/doom3/testdata/vectors.txt")["response-etqw"].Bytes
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		answer := append([]byte(nil), vector...)
		copy(answer[len("\xff\xffinfoResponse\x00"):], req[len(req)-4:])
		return [][]byte{answer}
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(st.Name, "|", st.Map, "|", st.Version, "|", st.Players, "|", st.Bots, "|", st.Raw["timeleft"], st.Raw["interestedClients"])
	if want := "ETQW box|valley|10.5|[{Strogg map[clantag:GDF id:0 ping:60 typeflag:0]}]|[{Bot map[clantag: id:4 ping:0 typeflag:1]}]|600 7"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
