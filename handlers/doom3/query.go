// Package doom3 queries id Tech 4 servers (Doom 3, Quake 4, Prey, Enemy
// Territory: Quake Wars, Wolfenstein 2009) for the game-query gateway.
package doom3

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wired3 "github.com/gamegate/gamegate/wire/doom3"
)

// Config is the configuration of the id Tech 4 server query
// (gamegate.query.doom3: Doom 3, Quake 4, Prey, Enemy Territory: Quake
// Wars, Wolfenstein). Each query carries a random challenge and only the
// answer echoing it is taken. A status maps the server info's si_name,
// si_map, si_maxPlayers and password flags, and its players (bots are the
// players with ping 0 or ETQW's type flag); the server info is raw. Zero
// values are the defaults.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

// QueryProtocol is the id Tech 4 query as a query.Protocol.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "doom3".
func (p *QueryProtocol) Name() string { return "doom3" }

// etqwQueryPort is ETQW's query port, whose game port differs (3074), as
// GameDig reads it.
const (
	etqwQueryPort = 27733
	etqwGamePort  = 3074
)

// Status asks getInfo and maps the answer as GameDig does: values without
// Quake colour codes (si_map also without "maps/" and ".entities"),
// version the protocol's major.minor, numplayers every player, bots the
// players with ping 0 or a type flag. Text is Windows-1252.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var challenge [4]byte
	_, _ = rand.Read(challenge[:])
	want := binary.LittleEndian.Uint32(challenge[:])
	var r wired3.Response
	answer, rtt, err := p.Answer(ctx, address, wired3.AppendRequest(nil, want), p.Now, func(d []byte) bool {
		return wired3.LooksLikeResponse(d) && r.Decode(d) == nil && r.Challenge == want
	})
	if err != nil {
		return nil, err
	}
	if err := r.Decode(answer); err != nil {
		return nil, query.Upstream(address, err)
	}
	version := fmt.Sprintf("%d.%d", r.Protocol>>16, r.Protocol&0xFFFF)
	st := &query.Status{Protocol: "doom3", Ping: rtt.Milliseconds(), Version: version,
		Raw: map[string]any{"protocolVersion": version, "osmask": r.OSMask}}
	gamePort := 0
	if st.SetAddress(address, 0); st.QueryPort == etqwQueryPort {
		gamePort = etqwGamePort
	}
	st.SetAddress(address, gamePort)
	for _, v := range r.Vars {
		value := plain(v.Value)
		if string(v.Key) == "si_map" {
			value = strings.Replace(strings.Replace(value, "maps/", "", 1), ".entities", "", 1)
		}
		st.Raw[text(v.Key)] = value
	}
	str := func(k string) string { s, _ := st.Raw[k].(string); return s }
	st.Name, st.Map = str("si_name"), str("si_map")
	for _, k := range []string{"si_maxplayers", "si_maxPlayers"} {
		if v := str(k); v != "" {
			st.MaxPlayers = leadingInt(v)
		}
	}
	st.Password = str("si_usepass") == "1" || str("si_needPass") == "1"
	if r.IsETQW {
		e := r.ETQW
		st.Raw["ranked"], st.Raw["timeleft"], st.Raw["gamestate"], st.Raw["servertype"] = e.Ranked, e.TimeLeft, e.GameState, e.ServerType
		switch e.ServerType {
		case 0:
			st.Raw["interestedClients"] = e.InterestedClients
		case 1:
			st.Raw["connectedClients"], st.Raw["maxClients"] = e.ConnectedClients, e.MaxClients
		}
	}
	st.Players, st.Bots = []query.Player{}, []query.Player{}
	for _, pl := range r.Players {
		raw := map[string]any{"id": pl.ID, "ping": pl.Ping}
		if !r.IsETQW {
			raw["rate"] = pl.Rate
		}
		if r.Layout != wired3.LayoutPlain {
			raw["clantag"] = plain(pl.ClanTag)
		}
		if r.Layout == wired3.LayoutClanTagTypeFlag {
			raw["typeflag"] = pl.TypeFlag
		}
		entry := query.Player{Name: plain(pl.Name), Raw: raw}
		if pl.Ping == 0 || pl.TypeFlag != 0 {
			st.Bots = append(st.Bots, entry)
		} else {
			st.Players = append(st.Players, entry)
		}
	}
	st.NumPlayers = len(r.Players)
	return st, nil
}

// text is b, Windows-1252, as UTF-8; plain the same without colour codes.
func text(b []byte) string  { return string(wire.AppendWindows1252(nil, b)) }
func plain(b []byte) string { return text(wired3.AppendPlain(nil, b)) }

// leadingInt reads the number s starts with, as JavaScript's parseInt.
func leadingInt(s string) int {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || end == 0 && (s[0] == '-' || s[0] == '+')) {
		end++
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw, the status's raw data: the protocol's one query.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var _ query.ProtocolConfig = (*Config)(nil)
