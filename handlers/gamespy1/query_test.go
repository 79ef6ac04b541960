package gamespy1

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// serve answers each status request with the datagrams given.
func serve(t *testing.T, datagrams ...string) string {
	return testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte {
		out := make([][]byte, len(datagrams))
		for i, d := range datagrams {
			out[i] = []byte(d)
		}
		return out
	}).String()
}

func protocol(t *testing.T) *QueryProtocol {
	p, err := (&Config{Attempts: query.Attempts{AttemptTimeout: 0}}).NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	return p.(*QueryProtocol)
}

// Battlefield 1942 numbers its teams from 1 and lists players who left
// past numplayers: GameDig counts teams from 0 and keeps numplayers
// players; a datagram of another query ID and a repeated part are
// dropped.
func TestStatusBattlefield1942(t *testing.T) {
	addr := serve(t,
		`\gamename\bfield1942\hostname\BF\numplayers\2\teamname_0\Axis\teamname_1\Allies\queryid\7.1`,
		`\player_0\stale\queryid\8.2`,  // another query's
		`\queryid\7.1\hostname\forged`, // part 1 again
		`\player_0\Ann\team_0\2\player_1\Bo\team_1\1\player_2\Gone\team_2\1\final\\queryid\7.2`)
	st, err := protocol(t).Status(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "BF" || st.NumPlayers != 2 || len(st.Players) != 2 {
		t.Fatalf("got %+v", st)
	}
	if st.Players[0].Name != "Ann" || st.Players[0].Raw["team"] != "Allies" || st.Players[0].Raw["teamId"] != 1.0 ||
		st.Players[1].Raw["team"] != "Axis" {
		t.Fatalf("got players %+v", st.Players)
	}
}

// Without team names a player's team stays its number; values are typed
// as GameDig types them: numbers and booleans, except under keys naming
// text.
func TestStatusTyping(t *testing.T) {
	addr := serve(t, `\HostName\007\mapname\12\dedicated\True\fraglimit\ 25 \gametype\1\website\2\player_0\7\team_0\3\final\\queryid\1.1`)
	st, err := protocol(t).Status(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"hostname": "007", "mapname": "12", "dedicated": true, "fraglimit": 25.0, "gametype": "1", "website": "2"}
	for k, v := range want {
		if st.Raw[k] != v {
			t.Errorf("raw.%s: got %#v, want %#v", k, st.Raw[k], v)
		}
	}
	if len(st.Players) != 1 || st.Players[0].Name != "7" || st.Players[0].Raw["team"] != 3.0 {
		t.Errorf("got players %+v", st.Players)
	}
}

// A server that never sends the final part is a timeout, not a partial
// answer.
func TestStatusWithoutFinalTimesOut(t *testing.T) {
	addr := serve(t, `\hostname\x\queryid\1.1`)
	p := protocol(t)
	p.Timeout, p.Retries = 100*time.Millisecond, -1
	if _, err := p.Status(context.Background(), addr); query.HTTPStatus(err) != 504 {
		t.Fatalf("got %v, want a timeout", err)
	}
}

// An answer in one datagram without a query ID ends at its \final\
// (GameDig waits on for a part that never comes).
func TestStatusUnnumberedFinal(t *testing.T) {
	addr := serve(t, `\hostname\solo\maxplayers\8\final\`)
	p := protocol(t)
	p.Timeout, p.Retries = 5*time.Second, -1
	st, err := p.Status(context.Background(), addr)
	if err != nil || st.Name != "solo" || st.MaxPlayers != 8 {
		t.Fatalf("got %+v (%v)", st, err)
	}
}

// A numplayers too large for an int keeps every player: a status, not a
// panic.
func TestStatusHugeNumplayers(t *testing.T) {
	for _, n := range []string{"1e300", "9223372036854775808", "1.5"} {
		st := status("127.0.0.1:1", []Pair{{"numplayers", n}, {"player_0", "a"}, {"player_1", "b"}}, 0)
		want := 2
		if n == "1.5" {
			want = 1 // GameDig's slice(0, 1.5)
		}
		if len(st.Players) != want || st.NumPlayers != want {
			t.Errorf("numplayers %s: got %d players (%d), want %d", n, len(st.Players), st.NumPlayers, want)
		}
	}
}
