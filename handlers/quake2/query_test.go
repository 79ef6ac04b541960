package quake2

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wireq2 "github.com/gamegate/gamegate/wire/quake2"
)

func TestStatusQuake2(t *testing.T) {
	s := testutil.ExampleQuake2()
	testutil.StartQuake(t, s)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte Q2" || st.Map != "q2dm1" || st.MaxPlayers != 16 || !st.Password || st.Version != "q2pro r1" ||
		st.NumPlayers != 3 || st.Connect != s.Addr || st.Protocol != "quake2" || st.Raw["needpass"] != "1" {
		t.Errorf("status: got %+v", st)
	}
	got := fmt.Sprint(st.Players, st.Bots)
	if want := "[{Zoë map[frags:12 ping:45]} {Eve map[address:127.0.0.1:27901 frags:-3 ping:120]}] [{Bot map[frags:0 ping:0]}]"; got != want {
		t.Errorf("players, bots: got %s, want %s", got, want)
	}
}

func TestStatusQuakeWorld(t *testing.T) {
	s := testutil.ExampleQuakeWorld()
	testutil.StartQuake(t, s)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}, Dialect: wireq2.QuakeWorld}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte QW" || st.Map != "dm4" || st.Version != "MVDSV 0.36" || st.NumPlayers != 3 || st.Protocol != "quake1" || len(st.Bots) != 1 {
		t.Errorf("status: got %+v", st)
	}
	if got := fmt.Sprint(st.Players); got != "[{Zoë map[color1:4 color2:11 id:5 ping:25 score:10 skin:base time:3]} {Alice map[color1:13 color2:13 id:9 ping:80 score:3 skin:base time:12]}]" {
		t.Errorf("players: got %s", got)
	}
	// A Quake 2 query of a QuakeWorld server takes no answer.
	q2 := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 50 * time.Millisecond, Retries: -1}}
	if _, err := q2.Status(context.Background(), s.Addr); query.HTTPStatus(err) != http.StatusGatewayTimeout {
		t.Errorf("quake2 of a QuakeWorld server: got %v, want a timeout", err)
	}
}
