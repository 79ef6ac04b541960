// Package bedrock queries Minecraft Bedrock edition servers (and Minecraft
// Education's) for the game-query gateway, with RakNet's unconnected ping.
package bedrock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/minecraft"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/netaddr"
	wirebe "github.com/gamegate/gamegate/wire/bedrock"
)

// QueryProtocol is Bedrock's unconnected ping as a query.Protocol. Every
// ping carries a random time and client GUID; only a pong echoing that time
// is taken, so neither a late pong to another ping nor a forged one is
// taken for the server's.
//
// Command: "raw" answers the advertisement as the server sent it, with the
// server's GUID.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "bedrock".
func (p *QueryProtocol) Name() string { return "bedrock" }

func (p *QueryProtocol) now() time.Time { return query.Now(p.Now) }

// FindsPort reports whether address is an IP address or a host name,
// which the protocol completes with Bedrock's default port, 19132.
func (*QueryProtocol) FindsPort(address string) bool {
	if _, err := netip.ParseAddr(strings.Trim(address, "[]")); err == nil {
		return true
	}
	return netaddr.IsHostName(address)
}

// Address returns address with Bedrock's default port when it names none.
func Address(address string) string {
	if _, _, err := net.SplitHostPort(address); err == nil {
		return address
	}
	return net.JoinHostPort(strings.Trim(address, "[]"), strconv.Itoa(wirebe.DefaultPort))
}

// ask pings the server and decodes the pong echoing the ping into r; the
// pong's bytes are r's to alias.
func (p *QueryProtocol) ask(ctx context.Context, address string, r *wirebe.Pong) (time.Duration, error) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	ping := wirebe.Ping{Time: int64(binary.BigEndian.Uint64(nonce[:8])), ClientGUID: int64(binary.BigEndian.Uint64(nonce[8:]))}
	start := p.now()
	err := p.Exchange(ctx, address, ping.AppendTo(nil), func(d []byte) (bool, error) {
		if t, ok := wirebe.PongTime(d); !ok || t != ping.Time {
			return false, nil // not a pong to this ping: drop it
		}
		return true, r.Decode(bytes.Clone(d))
	})
	if err != nil {
		return 0, err
	}
	return p.now().Sub(start), nil
}

// text returns a field as UTF-8 text, PocketMine's escaped semicolons
// restored and bytes that are not UTF-8 replaced.
func text(b []byte) string {
	return strings.ToValidUTF8(string(wirebe.AppendUnescaped(nil, b)), "\uFFFD")
}

// rawFields are the names of the advertisement's fields under raw.
var rawFields = [...]string{
	wirebe.FieldEdition: "edition", wirebe.FieldMOTD: "motd", wirebe.FieldProtocol: "protocol",
	wirebe.FieldVersion: "version", wirebe.FieldOnline: "online", wirebe.FieldMax: "max",
	wirebe.FieldServerID: "server_id", wirebe.FieldSubMOTD: "sub_motd", wirebe.FieldGameMode: "gamemode",
	wirebe.FieldGameModeNumeric: "gamemode_numeric", wirebe.FieldPortV4: "port_v4", wirebe.FieldPortV6: "port_v6",
}

// numericFields hold numbers, kept under raw as numbers when they are.
var numericFields = map[int]bool{
	wirebe.FieldProtocol: true, wirebe.FieldOnline: true, wirebe.FieldMax: true,
	wirebe.FieldGameModeNumeric: true, wirebe.FieldPortV4: true, wirebe.FieldPortV6: true,
}

// raw returns the pong as JSON-encodable data: each field the server sent
// under its name (numbers as numbers), fields past the twelve known ones
// under "extra", and the server GUID of the RakNet header as a decimal
// string (it does not fit JavaScript's numbers).
func raw(r *wirebe.Pong) map[string]any {
	m := make(map[string]any, r.NumFields+1)
	for i, f := range r.Fields[:r.NumFields] {
		if i >= len(rawFields) {
			var extra []string
			for _, e := range r.Fields[len(rawFields):r.NumFields] {
				extra = append(extra, text(e))
			}
			m["extra"] = extra
			break
		}
		if n, ok := wirebe.Number(f); ok && numericFields[i] {
			m[rawFields[i]] = n
		} else {
			m[rawFields[i]] = text(f)
		}
	}
	m["server_guid"] = strconv.FormatUint(uint64(r.ServerGUID), 10)
	return m
}

// Status pings the server. The status's name is the MOTD's first line and
// its map the second (the level name on vanilla servers), both without §
// formatting codes; version, players online and max come from the
// advertisement, and every field is kept under raw. The pong lists no
// players. connect is the advertised IPv4 port on the address's host.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var r wirebe.Pong
	address = Address(address)
	rtt, err := p.ask(ctx, address, &r)
	if err != nil {
		return nil, err
	}
	online, _ := wirebe.Number(r.Fields[wirebe.FieldOnline])
	maxPlayers, _ := wirebe.Number(r.Fields[wirebe.FieldMax])
	st := &query.Status{
		Name:       minecraft.StripFormatting(text(r.Fields[wirebe.FieldMOTD])),
		Version:    text(r.Fields[wirebe.FieldVersion]),
		NumPlayers: online,
		MaxPlayers: maxPlayers,
		Players:    []query.Player{},
		Bots:       []query.Player{},
		Ping:       rtt.Milliseconds(),
		Protocol:   "bedrock",
		Raw:        raw(&r),
	}
	// The advertised IPv4 port is where game clients join.
	port4, _ := wirebe.Number(r.Fields[wirebe.FieldPortV4])
	st.SetAddress(address, port4)
	if f, ok := r.Field(wirebe.FieldSubMOTD); ok {
		st.Map = minecraft.StripFormatting(text(f))
	}
	return st, nil
}

// ReadOnlyCommands is "raw": a ping changes nothing on a server.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command answers "raw": the advertisement as the server sent it and the
// server GUID of the RakNet header.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if command != "raw" {
		return nil, query.Errorf(http.StatusNotFound, "bedrock has no command %q (it has raw)", command)
	}
	if len(args) != 0 {
		return nil, query.Errorf(http.StatusBadRequest, "the raw command takes no arguments")
	}
	var r wirebe.Pong
	if _, err := p.ask(ctx, Address(address), &r); err != nil {
		return nil, err
	}
	return map[string]any{
		"advertisement": strings.ToValidUTF8(string(r.Advertisement), "\uFFFD"),
		"server_guid":   strconv.FormatUint(uint64(r.ServerGUID), 10),
	}, nil
}
