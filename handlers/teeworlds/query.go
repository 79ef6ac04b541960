// Package teeworlds queries Teeworlds 0.7 servers for the game-query
// gateway.
package teeworlds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wiretw "github.com/gamegate/gamegate/wire/teeworlds"
)

// QueryProtocol is Teeworlds 0.7's server info query as a query.Protocol.
// Each attempt draws a fresh client token and browse token; a token
// response not addressed to the client token, and an info not addressed
// to it or not echoing the browse token, are dropped. It has no commands.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "teeworlds".
func (p *QueryProtocol) Name() string { return "teeworlds" }

// random returns a random token: any value but TokenNone.
func random() uint32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		if v := binary.BigEndian.Uint32(b[:]); v != wiretw.TokenNone {
			return v
		}
	}
}

// ask runs the token exchange and the info request and decodes the info
// into m, which aliases a copy of the answer.
func (p *QueryProtocol) ask(ctx context.Context, address string, m *wiretw.Info) (time.Duration, error) {
	raddr, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		return 0, query.Failure(address, err)
	}
	var rtt time.Duration
	var answer []byte
	var unusable error
	err = p.Run(ctx, raddr, func(a *query.Attempt) (func([]byte) (bool, error), error) {
		token, browse := random(), int32(random()&0x3FFFFFFF)
		tr := wiretw.TokenRequest{Token: token}
		req, _ := tr.AppendTo(make([]byte, 0, tr.Len()))
		if a.Send(req) != nil {
			return nil, nil // cannot be sent now: as good as unanswered
		}
		var asked time.Time
		return func(d []byte) (bool, error) {
			if to, ok := wiretw.PeekTokenResponse(d); ok && to == token && asked.IsZero() {
				var resp wiretw.TokenResponse
				if resp.Decode(d) != nil {
					return false, nil
				}
				ir := wiretw.InfoRequest{To: resp.Token, Token: token, BrowseToken: browse}
				req, _ := ir.AppendTo(req[:0])
				asked = query.Now(p.Now)
				return false, a.Send(req)
			}
			if to, b, ok := wiretw.PeekInfo(d); ok && to == token && b == browse && !asked.IsZero() {
				rtt = query.Now(p.Now).Sub(asked)
				answer = bytes.Clone(d)
				unusable = m.Decode(answer)
				return true, unusable
			}
			return false, nil // not an answer to this query: drop it
		}, nil
	})
	switch {
	case err == nil:
		return rtt, nil
	case unusable != nil:
		return 0, query.Upstream(address, unusable)
	}
	return 0, query.Failure(address, err)
}

// text returns b as a string, bytes that are not UTF-8 replaced.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// Status asks the server for its info.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var m wiretw.Info
	rtt, err := p.ask(ctx, address, &m)
	if err != nil {
		return nil, err
	}
	st := &query.Status{Protocol: "teeworlds", Ping: rtt.Milliseconds(),
		Name: text(m.Name), Map: text(m.Map), Version: text(m.Version),
		Password:   m.Flags&wiretw.InfoFlagPassword != 0,
		NumPlayers: int(m.NumClients), MaxPlayers: int(m.MaxClients),
		Players: []query.Player{}, Bots: []query.Player{},
		Raw: map[string]any{
			"hostname": text(m.Hostname), "gametype": text(m.GameType),
			"flags": m.Flags, "timescore": m.Flags&wiretw.InfoFlagTimeScore != 0, "skill_level": m.SkillLevel,
			"num_players": m.NumPlayers, "max_players": m.MaxPlayers,
			"num_clients": m.NumClients, "max_clients": m.MaxClients,
		}}
	st.SetAddress(address, 0) // the query goes to the game's own port
	for _, c := range m.Clients {
		pl := query.Player{Name: text(c.Name), Raw: map[string]any{
			"clan": text(c.Clan), "country": c.Country, "score": c.Score,
			"spectator": c.Flags&wiretw.ClientFlagSpectator != 0}}
		if c.Flags&wiretw.ClientFlagBot != 0 {
			pl.Raw["bot"] = true
			st.Bots = append(st.Bots, pl)
		} else {
			st.Players = append(st.Players, pl)
		}
	}
	return st, nil
}

// Command answers that the query has no commands.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return nil, query.Errorf(http.StatusNotFound, "teeworlds has no command %q (it has none)", command)
}
