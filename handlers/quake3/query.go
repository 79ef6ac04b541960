// Package quake3 queries Quake 3 family servers (ioquake3, OpenArena,
// DarkPlaces and their games) for the game-query gateway.
package quake3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wireq3 "github.com/gamegate/gamegate/wire/quake3"
)

// QueryProtocol is the Quake 3 family as a query.Protocol. Every query
// carries a fresh random challenge, and answers that do not echo it are
// dropped, so neither a late answer to another query nor a spoofed one is
// taken for the server's.
//
// Commands: "info" (getinfo's info string), "rules" (getstatus's info
// string) and "players" (getstatus's player lines).
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "quake3".
func (p *QueryProtocol) Name() string { return "quake3" }

func (p *QueryProtocol) now() time.Time { return query.Now(p.Now) }

// ask sends command with a new challenge and decodes the answer that
// echoes it into r.
func (p *QueryProtocol) ask(ctx context.Context, address, command string, r *wireq3.Response) (time.Duration, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	var challenge [16]byte
	hex.Encode(challenge[:], raw[:])
	req, err := wireq3.AppendRequest(nil, command, challenge[:])
	if err != nil {
		return 0, err
	}
	want := wireq3.KindStatus
	if command == "getinfo" {
		want = wireq3.KindInfo
	}
	var answer []byte
	start := p.now()
	err = p.Exchange(ctx, address, req, func(d []byte) (bool, error) {
		var probe wireq3.Response
		if probe.Decode(d) != nil || probe.Kind != want {
			return false, nil // not an answer to this query: drop it
		}
		if c, ok := probe.Get("challenge"); !ok || !bytes.Equal(c, challenge[:]) {
			return false, nil
		}
		answer = bytes.Clone(d)
		return true, nil
	})
	rtt := p.now().Sub(start)
	if err != nil {
		return 0, err
	}
	if err := r.Decode(answer); err != nil {
		return 0, query.Upstream(address, err)
	}
	return rtt, nil
}

// vars returns the info string as a map, without the challenge (ours,
// not the server's), keeping colour codes.
func vars(r *wireq3.Response) map[string]any {
	m := make(map[string]any, len(r.Vars))
	for _, v := range r.Vars {
		if k := string(v.Key); !strings.EqualFold(k, "challenge") {
			m[k] = validUTF8(v.Value)
		}
	}
	return m
}

// validUTF8 returns b as a string, with bytes that are not UTF-8 (Quake 3's
// high-ASCII "fun" characters) replaced.
func validUTF8(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// plain returns b without colour codes.
func plain(b []byte) string {
	return validUTF8(wireq3.AppendPlainName(nil, b))
}

// first returns the value of the first of keys that is present.
func first(r *wireq3.Response, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		if v, ok := r.Get(k); ok {
			return v, true
		}
	}
	return nil, false
}

func atoi(b []byte) int {
	n, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return n
}

// players converts the player lines into people and bots. A player whose
// ping is 0 is a bot: ioquake3 and DarkPlaces report bots that way, and
// GameDig reads them so. Each keeps GameDig's frags and ping under raw,
// with its name as sent (colour codes included), DarkPlaces' team, and
// bot: true for bots (the players command lists people and bots in one).
func players(r *wireq3.Response) (people, bots []query.Player) {
	people, bots = []query.Player{}, []query.Player{}
	for i := range r.Players {
		pl := &r.Players[i]
		raw := map[string]any{"name": validUTF8(pl.Name), "frags": pl.Score, "ping": pl.Ping}
		if pl.HasTeam {
			raw["team"] = pl.Team
		}
		p := query.Player{Name: plain(pl.Name), Raw: raw}
		if pl.Ping == 0 {
			raw["bot"] = true
			bots = append(bots, p)
		} else {
			people = append(people, p)
		}
	}
	return people, bots
}

// Status asks getstatus and normalises the answer across engines' key
// names: ioquake3's sv_hostname, DarkPlaces' hostname, sv_maxclients or
// maxclients, g_needpass or needpass.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var r wireq3.Response
	rtt, err := p.ask(ctx, address, "getstatus", &r)
	if err != nil {
		return nil, err
	}
	st := &query.Status{Protocol: "quake3", Ping: rtt.Milliseconds(), Raw: vars(&r)}
	st.SetAddress(address, 0) // the query port is the game port
	if v, ok := first(&r, "sv_hostname", "hostname"); ok {
		st.Name = plain(v)
	}
	if v, ok := first(&r, "mapname"); ok {
		st.Map = validUTF8(v)
	}
	if v, ok := first(&r, "version", "gameversion", "shortversion"); ok {
		st.Version = validUTF8(v)
	}
	if v, ok := first(&r, "sv_maxclients", "maxclients"); ok {
		st.MaxPlayers = atoi(v)
	}
	if v, ok := first(&r, "g_needpass", "needpass", "pswrd"); ok {
		st.Password = atoi(v) != 0
	}
	st.Players, st.Bots = players(&r)
	// Every line, bots included, as GameDig counts (getstatus has no count
	// of its own on ioquake3; DarkPlaces' clients and bots stay in raw).
	st.NumPlayers = len(st.Players) + len(st.Bots)
	return st, nil
}

// ReadOnlyCommands returns info, rules and players: each only reads the
// server's state, so game_query forwards them by default.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"info", "rules", "players"} }

// Command runs info, rules or players.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if len(args) != 0 {
		return nil, query.Errorf(http.StatusBadRequest, "the %s command takes no arguments", command)
	}
	var r wireq3.Response
	switch command {
	case "info":
		if _, err := p.ask(ctx, address, "getinfo", &r); err != nil {
			return nil, err
		}
		return vars(&r), nil
	case "rules":
		if _, err := p.ask(ctx, address, "getstatus", &r); err != nil {
			return nil, err
		}
		return vars(&r), nil
	case "players":
		if _, err := p.ask(ctx, address, "getstatus", &r); err != nil {
			return nil, err
		}
		people, bots := players(&r)
		return append(people, bots...), nil
	}
	return nil, query.Errorf(http.StatusNotFound, "quake3 has no command %q (it has info, rules and players)", command)
}
