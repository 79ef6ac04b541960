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
	s := &testutil.QuakeServer{Info: [][2]string{{"hostname", "Gâte Q2"}, {"mapname", "q2dm1"}, {"maxclients", "16"},
		{"needpass", "1"}, {"version", "q2pro r1"}},
		Players: []testutil.QuakePlayer{{Frags: 12, Ping: 45, Name: "Zoë"}, {Frags: 0, Ping: 0, Name: "Bot"},
			{Frags: -3, Ping: 120, Name: "Eve", Address: "127.0.0.1:27901"}}}
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
	s := &testutil.QuakeServer{QuakeWorld: true, Info: [][2]string{{"hostname", "Gâte QW"}, {"map", "dm4"}, {"maxclients", "8"},
		{"*version", "MVDSV 0.36"}, {"version", "other"}},
		Players: []testutil.QuakePlayer{{ID: 5, Frags: 10, Time: 3, Ping: 25, Name: "Zoë", Skin: "base", Top: 4, Bottom: 11}}}
	testutil.StartQuake(t, s)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}, Dialect: wireq2.QuakeWorld}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte QW" || st.Map != "dm4" || st.Version != "MVDSV 0.36" || st.NumPlayers != 1 || st.Protocol != "quake1" {
		t.Errorf("status: got %+v", st)
	}
	if got := fmt.Sprint(st.Players); got != "[{Zoë map[color1:4 color2:11 id:5 ping:25 score:10 skin:base time:3]}]" {
		t.Errorf("players: got %s", got)
	}
	// A Quake 2 query of a QuakeWorld server takes no answer.
	q2 := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 50 * time.Millisecond, Retries: -1}}
	if _, err := q2.Status(context.Background(), s.Addr); query.HTTPStatus(err) != http.StatusGatewayTimeout {
		t.Errorf("quake2 of a QuakeWorld server: got %v, want a timeout", err)
	}
}
