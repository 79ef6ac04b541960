// Package mumbleping queries Mumble servers (Murmur, mumble-server) for the
// game-query gateway over Mumble's UDP ping.
package mumbleping

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net/http"
	"strconv"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wiremp "github.com/gamegate/gamegate/wire/mumbleping"
)

// QueryProtocol is Mumble's UDP ping as a query.Protocol. Every ping
// carries a fresh random ident, and pongs that do not echo it are dropped,
// so neither a late answer to another query nor a spoofed one is taken for
// the server's. It has no commands.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "mumbleping".
func (p *QueryProtocol) Name() string { return "mumbleping" }

// Status pings the server.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var ident [8]byte
	_, _ = rand.Read(ident[:])
	ping := wiremp.Ping{Ident: binary.BigEndian.Uint64(ident[:])}
	req, _ := ping.AppendTo(make([]byte, 0, wiremp.PingLen))
	var pong wiremp.Pong
	start := query.Now(p.Now)
	err := p.Exchange(ctx, address, req, func(d []byte) (bool, error) {
		if id, ok := wiremp.PongIdent(d); !ok || id != ping.Ident {
			return false, nil // not the answer to this ping: drop it
		}
		return true, pong.Decode(d)
	})
	rtt := query.Now(p.Now).Sub(start)
	if err != nil {
		return nil, err
	}
	st := &query.Status{Protocol: "mumbleping", Ping: rtt.Milliseconds(),
		NumPlayers: clamp(pong.Users), MaxPlayers: clamp(pong.MaxUsers),
		Version: strconv.Itoa(int(pong.Major())) + "." + strconv.Itoa(int(pong.Minor())) + "." + strconv.Itoa(int(pong.Patch())),
		Raw: map[string]any{
			"versionMajor": pong.Major(), "versionMinor": pong.Minor(), "versionPatch": pong.Patch(),
			"allowedbandwidth": pong.Bandwidth,
		}}
	st.SetAddress(address, 0) // the ping goes to the port clients join
	return st, nil
}

// clamp keeps a server's uint32 count within an int on every platform.
func clamp(n uint32) int { return int(min(n, 1<<31-1)) }

// Command answers that the ping has no commands.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return nil, query.Errorf(http.StatusNotFound, "mumbleping has no command %q (it has none)", command)
}
