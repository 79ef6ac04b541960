// Package openttd queries OpenTTD servers for the game-query gateway over
// the game's TCP port.
package openttd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wireottd "github.com/gamegate/gamegate/wire/openttd"
)

// QueryProtocol is OpenTTD's server query as a query.Protocol: one TCP
// connection per attempt, the game-info request, one answer packet of at
// most wireottd.MaxPacketSize bytes. It has no commands.
type QueryProtocol struct {
	// Timeout bounds one attempt: connecting, asking and reading the
	// answer. Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first; -1 for none.
	// Default: 1.
	Retries int
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "openttd".
func (p *QueryProtocol) Name() string { return "openttd" }

// errNotGameInfo is an answer that is not PACKET_SERVER_GAME_INFO.
var errNotGameInfo = errors.New("not a game-info packet")

// ask makes the attempts and returns the answer packet and its round trip
// (the connection's set-up excluded).
func (p *QueryProtocol) ask(ctx context.Context, address string) ([]byte, time.Duration, error) {
	timeout, retries := query.AttemptLimits(p.Timeout, p.Retries)
	var err error
	for attempt := 0; attempt <= retries; attempt++ {
		var packet []byte
		var rtt time.Duration
		packet, rtt, err = p.attempt(ctx, address, timeout)
		var de *wire.DecodeError
		switch {
		case err == nil:
			return packet, rtt, nil
		case ctx.Err() != nil:
			return nil, 0, query.Failure(address, ctx.Err())
		case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &de), errors.Is(err, errNotGameInfo):
			// Nothing listens, or the server answered something else:
			// asking again cannot help.
			attempt = retries
		}
	}
	var de *wire.DecodeError
	if errors.As(err, &de) || errors.Is(err, errNotGameInfo) {
		return nil, 0, query.Upstream(address, err)
	}
	return nil, 0, query.Failure(address, err)
}

func (p *QueryProtocol) attempt(ctx context.Context, address string, timeout time.Duration) ([]byte, time.Duration, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(dctx, "tcp", address)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	defer query.BoundDeadline(dctx, c, timeout)()
	start := query.Now(p.Now)
	if _, err := c.Write(wireottd.AppendRequest(make([]byte, 0, wireottd.HeaderLen))); err != nil {
		return nil, 0, err
	}
	var head [wireottd.HeaderLen]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return nil, 0, err
	}
	rtt := query.Now(p.Now).Sub(start)
	size, typ, ok := wireottd.PacketSize(head[:])
	if !ok || typ != wireottd.TypeServerGameInfo {
		return nil, 0, fmt.Errorf("%w: packet type %d of %d bytes", errNotGameInfo, typ, size)
	}
	packet := make([]byte, size)
	copy(packet, head[:])
	if _, err := io.ReadFull(c, packet[wireottd.HeaderLen:]); err != nil {
		return nil, 0, err
	}
	return packet, rtt, nil
}

// landscapes are the climates by number, as GameDig names them.
var landscapes = []string{"temperate", "arctic", "desert", "toyland"}

func date(days uint32) string {
	y, m, d := wireottd.Date(days)
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

// dayTicks is OpenTTD's DAY_TICKS: game ticks in a day.
const dayTicks = 74

// Status asks the server for its game info.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	packet, rtt, err := p.ask(ctx, address)
	if err != nil {
		return nil, err
	}
	var g wireottd.GameInfo
	if err := g.Decode(packet); err != nil {
		return nil, query.Upstream(address, err)
	}
	st := &query.Status{Protocol: "openttd", Ping: rtt.Milliseconds(),
		Name: text(g.Name), Version: text(g.Revision), Map: text(g.MapName), Password: g.Password,
		NumPlayers: int(g.NumClients), MaxPlayers: int(g.MaxClients)}
	st.SetAddress(address, 0) // the query goes to the game's own port
	raw := map[string]any{
		"game_info_version": g.InfoVersion,
		"date_current":      date(g.CalendarDate), "date_start": date(g.StartDate),
		"numspectators": g.NumSpectators,
		"map_width":     g.MapWidth, "map_height": g.MapHeight,
		"dedicated": g.Dedicated,
	}
	if int(g.Landscape) < len(landscapes) {
		raw["landscape"] = landscapes[g.Landscape]
	} else {
		raw["landscape"] = g.Landscape
	}
	// ticks_playing: sent since version 7; before, estimated from the
	// dates as OpenTTD's own client does.
	if g.InfoVersion >= 7 {
		raw["ticks_playing"] = g.TicksPlaying
	} else {
		raw["ticks_playing"] = uint64(max(0, int64(g.CalendarDate)-int64(g.StartDate))) * dayTicks
	}
	if g.InfoVersion >= 6 {
		raw["newgrf_serialisation"] = g.GRFSerialisation
	} else {
		raw["language"] = g.Language
	}
	if g.InfoVersion >= 5 {
		raw["gamescript_version"] = g.GameScriptVersion
		raw["gamescript_name"] = text(g.GameScriptName)
	}
	if g.InfoVersion >= 4 {
		grfs := make([]map[string]any, 0, len(g.GRFs))
		for _, f := range g.GRFs {
			var id [4]byte
			id[0], id[1], id[2], id[3] = byte(f.ID), byte(f.ID>>8), byte(f.ID>>16), byte(f.ID>>24)
			m := map[string]any{"id": hex.EncodeToString(id[:]), "md5": hex.EncodeToString(f.MD5[:])}
			if f.HasName {
				m["name"] = text(f.Name)
			}
			grfs = append(grfs, m)
		}
		raw["grfs"] = grfs
	}
	if g.InfoVersion >= 2 {
		raw["maxcompanies"], raw["numcompanies"], raw["maxspectators"] = g.MaxCompanies, g.NumCompanies, g.MaxSpectators
	}
	st.Raw = raw
	return st, nil
}

// text returns b as a string, bytes that are not UTF-8 replaced.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// Command answers that the query has no commands.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return nil, query.Errorf(http.StatusNotFound, "openttd has no command %q (it has none)", command)
}
