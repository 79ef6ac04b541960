package quake3

import (
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wireq3 "github.com/gamegate/gamegate/wire/quake3"
)

// fakeServer answers Quake 3 queries on loopback with answer(challenge,
// command), which returns the datagrams to send back in order.
func fakeServer(t *testing.T, answer func(command string, challenge []byte) [][]byte) (string, *atomic.Int64) {
	t.Helper()
	var queries atomic.Int64
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, q []byte) [][]byte {
		queries.Add(1)
		if !bytes.HasPrefix(q, []byte("\xff\xff\xff\xff")) {
			return nil
		}
		command, challenge, _ := bytes.Cut(q[4:], []byte{' '})
		return answer(string(command), challenge)
	})
	return addr.String(), &queries
}

func statusAnswer(t *testing.T, challenge []byte) []byte {
	r := wireq3.Response{Kind: wireq3.KindStatus, Vars: []wireq3.Var{
		{Key: []byte("sv_hostname"), Value: []byte("^1Red ^7Arena")},
		{Key: []byte("mapname"), Value: []byte("oa_dm1")},
		{Key: []byte("sv_maxclients"), Value: []byte("8")},
		{Key: []byte("g_needpass"), Value: []byte("1")},
		{Key: []byte("version"), Value: []byte("ioq3 1.36")},
		{Key: []byte("challenge"), Value: challenge},
	}, Players: []wireq3.Player{
		{Score: 5, Ping: 48, Name: []byte("^2Alice")},
		{Score: 0, Ping: 0, Name: []byte("Dark")},
	}}
	b, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStatusWantsItsChallenge(t *testing.T) {
	addr, _ := fakeServer(t, func(command string, challenge []byte) [][]byte {
		if command != "getstatus" {
			return nil
		}
		// A spoofed or stale answer first (another challenge, then none),
		// then the real one.
		return [][]byte{statusAnswer(t, []byte("0000")), statusAnswer(t, nil), statusAnswer(t, challenge)}
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Red Arena" || st.Map != "oa_dm1" || st.MaxPlayers != 8 || !st.Password || st.Version != "ioq3 1.36" ||
		st.NumPlayers != 2 || st.Protocol != "quake3" || st.Connect != addr || st.QueryPort == 0 {
		t.Fatalf("got %+v", st)
	}
	// The player with ping 0 is a bot, apart from the people.
	if len(st.Players) != 1 || len(st.Bots) != 1 {
		t.Fatalf("got players %+v and bots %+v, want one of each", st.Players, st.Bots)
	}
	if st.Players[0].Name != "Alice" || st.Players[0].Raw["name"] != "^2Alice" || st.Players[0].Raw["frags"] != 5 ||
		st.Players[0].Raw["ping"] != 48 || st.Players[0].Raw["bot"] != nil || st.Bots[0].Name != "Dark" || st.Bots[0].Raw["bot"] != true {
		t.Fatalf("players: got %+v, bots %+v", st.Players, st.Bots)
	}
	if _, ok := st.Raw["challenge"]; ok || st.Raw["sv_hostname"] != "^1Red ^7Arena" {
		t.Fatalf("raw: got %v", st.Raw)
	}
}

func TestAnswersWithoutTheChallengeAreDropped(t *testing.T) {
	for name, bad := range map[string]func([]byte) []byte{
		"other challenge": func(c []byte) []byte { return statusAnswer(t, append(bytes.Clone(c), 'x')) },
		"no challenge":    func([]byte) []byte { return statusAnswer(t, nil) },
		"info for status": func(c []byte) []byte {
			b, _ := (&wireq3.Response{Kind: wireq3.KindInfo, Vars: []wireq3.Var{{Key: []byte("challenge"), Value: c}}}).AppendTo(nil)
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			addr, queries := fakeServer(t, func(_ string, c []byte) [][]byte { return [][]byte{bad(c)} })
			p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 200 * time.Millisecond, Retries: 1}}
			_, err := p.Status(context.Background(), addr)
			if query.HTTPStatus(err) != http.StatusGatewayTimeout {
				t.Fatalf("got %v, want a timeout", err)
			}
			if n := queries.Load(); n != 2 {
				t.Fatalf("the server saw %d queries, want 2 (one retry)", n)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	addr, _ := fakeServer(t, func(command string, c []byte) [][]byte {
		if command == "getinfo" {
			b, _ := (&wireq3.Response{Kind: wireq3.KindInfo, Vars: []wireq3.Var{
				{Key: []byte("hostname"), Value: []byte("x")}, {Key: []byte("challenge"), Value: c}}}).AppendTo(nil)
			return [][]byte{b}
		}
		return [][]byte{statusAnswer(t, c)}
	})
	p := &QueryProtocol{}
	info, err := p.Command(context.Background(), addr, "info", nil)
	if m, ok := info.(map[string]any); err != nil || !ok || m["hostname"] != "x" || len(m) != 1 {
		t.Fatalf("info: got %v, %v", info, err)
	}
	pl, err := p.Command(context.Background(), addr, "players", nil)
	if l, ok := pl.([]query.Player); err != nil || !ok || len(l) != 2 {
		t.Fatalf("players: got %v, %v", pl, err)
	}
	rules, err := p.Command(context.Background(), addr, "rules", nil)
	if m, ok := rules.(map[string]any); err != nil || !ok || m["mapname"] != "oa_dm1" {
		t.Fatalf("rules: got %v, %v", rules, err)
	}
	if _, err := p.Command(context.Background(), addr, "rcon", nil); query.HTTPStatus(err) != http.StatusNotFound {
		t.Fatalf("rcon: got %v, want 404", err)
	}
	if _, err := p.Command(context.Background(), addr, "info", []string{"x"}); query.HTTPStatus(err) != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "no arguments") {
		t.Fatalf("info x: got %v, want 400", err)
	}
}
