// Package minecraft queries Minecraft Java edition servers for the
// game-query gateway: the Server List Ping over TCP, with the legacy FE 01
// ping as a fallback. Bedrock edition servers are package bedrock's.
package minecraft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/wire"
	wiremc "github.com/gamegate/gamegate/wire/minecraft"
)

// JavaProtocol is the Java edition's Server List Ping as a query.Protocol.
//
// Command: "raw" answers the server's status JSON as it sent it (favicon
// included).
type JavaProtocol struct {
	// Timeout bounds one query (connect, status and ping). Default: 3s.
	Timeout time.Duration
	// ProtocolVersion is the protocol number the handshake announces.
	// Default: -1, the convention for "only asking for the status".
	ProtocolVersion int32
	// Legacy enables the FE 01 ping when a server does not answer the
	// modern one (servers before 1.7).
	Legacy bool
	// IncludeFavicon keeps the favicon (a data: URI, often 10 KB) in the
	// status's raw data.
	IncludeFavicon bool
	// Resolver looks up _minecraft._tcp.<host> for addresses given as a
	// bare host name, and the names the protocol connects to. Default:
	// net.DefaultResolver.
	Resolver *net.Resolver
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "minecraft".
func (p *JavaProtocol) Name() string { return "minecraft" }

func (p *JavaProtocol) now() time.Time { return query.Now(p.Now) }

// FindsPort reports whether address is a host name, which the protocol
// looks up as an SRV record (an IP address without a port is refused: the
// game's client only looks up names).
func (*JavaProtocol) FindsPort(address string) bool { return netaddr.IsHostName(address) }

func (p *JavaProtocol) resolver() *net.Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

// errNotModern is the failure after which the legacy ping is tried.
var errNotModern = errors.New("the server did not answer the Server List Ping")

// resolve turns address into host:port. A bare host name (no port) is
// looked up as _minecraft._tcp.<host>, as the game's client does, and
// otherwise gets the default port.
func (p *JavaProtocol) resolve(ctx context.Context, address string) (dial, host string, port uint16) {
	if h, ps, err := net.SplitHostPort(address); err == nil {
		n, _ := strconv.Atoi(ps)
		return address, h, uint16(n)
	}
	host = strings.TrimSuffix(address, ".")
	if net.ParseIP(host) == nil {
		if _, srvs, err := p.resolver().LookupSRV(ctx, "minecraft", "tcp", host); err == nil && len(srvs) > 0 {
			target := strings.TrimSuffix(srvs[0].Target, ".")
			return net.JoinHostPort(target, strconv.Itoa(int(srvs[0].Port))), target, srvs[0].Port
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(wiremc.DefaultPort)), host, wiremc.DefaultPort
}

func (p *JavaProtocol) deadline(ctx context.Context) time.Time {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return d
}

func (p *JavaProtocol) dial(ctx context.Context, address string, deadline time.Time) (net.Conn, func() bool, error) {
	d := net.Dialer{Resolver: p.resolver()}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := d.DialContext(dctx, "tcp", address)
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return c, stop, nil
}

// exchange is one modern Server List Ping: the status JSON and the ping's
// round trip.
func (p *JavaProtocol) exchange(ctx context.Context, address, host string, port uint16, deadline time.Time) ([]byte, time.Duration, error) {
	c, stop, err := p.dial(ctx, address, deadline)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	defer c.Close()
	version := p.ProtocolVersion
	if version == 0 {
		version = -1
	}
	req, err := wiremc.AppendHandshake(nil, version, host, port, wiremc.NextStateStatus)
	if err != nil {
		return nil, 0, err
	}
	req = wiremc.AppendStatusRequest(req)
	if _, err := c.Write(req); err != nil {
		return nil, 0, err
	}
	var s stream
	f, err := s.next(c)
	if err != nil {
		return nil, 0, err
	}
	if f.ID != wiremc.IDStatus {
		return nil, 0, fmt.Errorf("%w: packet 0x%02x instead of the status", errNotModern, f.ID)
	}
	js, err := wiremc.DecodeStatusResponse(f.Data)
	if err != nil {
		return nil, 0, err
	}
	js = append([]byte(nil), js...)
	// The ping: its round trip is the server's latency. A server that
	// closes instead of answering still gave its status.
	start := p.now()
	token := start.UnixNano()
	if _, err := c.Write(wiremc.AppendPing(nil, token)); err != nil {
		return js, 0, nil
	}
	f, err = s.next(c)
	if err != nil || f.ID != wiremc.IDPing {
		return js, 0, nil
	}
	if v, err := wiremc.DecodePong(f.Data); err != nil || v != token {
		return js, 0, nil
	}
	return js, p.now().Sub(start), nil
}

// stream reads frames from a connection into a bounded buffer.
type stream struct {
	buf []byte
	off int
}

func (s *stream) next(c net.Conn) (wiremc.Frame, error) {
	if s.off > 0 {
		s.buf = append(s.buf[:0], s.buf[s.off:]...)
		s.off = 0
	}
	for {
		f, n, err := wiremc.SplitFrame(s.buf, 0)
		if err == nil {
			s.off = n
			return f, nil
		}
		if !errors.Is(err, wire.ErrTruncated) {
			return f, fmt.Errorf("%w: %v", errNotModern, err)
		}
		if len(s.buf) == cap(s.buf) {
			const limit = wiremc.MaxFrame + wiremc.MaxVarIntLen
			if cap(s.buf) >= limit {
				return wiremc.Frame{}, fmt.Errorf("%w: a packet longer than %d bytes", errNotModern, limit)
			}
			s.buf = slices.Grow(s.buf, min(max(512, cap(s.buf)), limit-cap(s.buf)))
		}
		n, err = c.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			return wiremc.Frame{}, err
		}
	}
}

// legacy is the FE 01 ping.
func (p *JavaProtocol) legacy(ctx context.Context, address, host string, port uint16, deadline time.Time) (*wiremc.LegacyStatus, time.Duration, error) {
	c, stop, err := p.dial(ctx, address, deadline)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	defer c.Close()
	req, err := wiremc.AppendLegacyPing(nil, host, port)
	if err != nil {
		return nil, 0, err
	}
	start := p.now()
	if _, err := c.Write(req); err != nil {
		return nil, 0, err
	}
	var s wiremc.LegacyStatus
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= 3+2*wiremc.MaxLegacyChars {
				return nil, 0, errors.New("the legacy answer is too long")
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if derr := s.Decode(buf); derr == nil {
			return &s, p.now().Sub(start), nil
		} else if !errors.Is(derr, wire.ErrTruncated) {
			return nil, 0, derr
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

// statusJSON is the part of the status JSON the normalised status reads.
type statusJSON struct {
	Version struct {
		Name     string `json:"name"`
		Protocol int    `json:"protocol"`
	} `json:"version"`
	Players struct {
		Max    int `json:"max"`
		Online int `json:"online"`
		Sample []struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		} `json:"sample"`
	} `json:"players"`
	Description json.RawMessage `json:"description"`
}

// Status asks the Server List Ping (and the legacy ping if enabled and
// the server does not speak the modern one).
func (p *JavaProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	dialAddr, host, port := p.resolve(ctx, address)
	deadline := p.deadline(ctx)
	js, rtt, err := p.exchange(ctx, dialAddr, host, port, deadline)
	if err != nil {
		if ls, lrtt, ok := p.legacyFallback(ctx, err, dialAddr, host, port, deadline); ok {
			st := legacyStatus(address, ls, lrtt)
			st.SetAddress(dialAddr, 0)
			st.Address = address
			return st, nil
		}
		return nil, failure(dialAddr, err)
	}
	st, err := p.modernStatus(address, js, rtt)
	if err == nil {
		// Where the game client joins: the address the status came from
		// (a bare host name's SRV target), the game's own port.
		st.SetAddress(dialAddr, 0)
		st.Address = address // as asked: a bare host name stays one
	}
	return st, err
}

// legacyFallback asks the legacy ping, if enabled, after the Server List
// Ping failed with err for a reason other than a timeout.
func (p *JavaProtocol) legacyFallback(ctx context.Context, err error, dialAddr, host string, port uint16, deadline time.Time) (*wiremc.LegacyStatus, time.Duration, bool) {
	if !p.Legacy || isTimeout(err) || !time.Now().Before(deadline) {
		return nil, 0, false
	}
	ls, rtt, lerr := p.legacy(ctx, dialAddr, host, port, deadline)
	return ls, rtt, lerr == nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

func failure(address string, err error) error {
	switch {
	case isTimeout(err), errors.Is(err, context.Canceled):
		return query.Timeout(address)
	case errors.Is(err, errNotModern):
		return query.Upstream(address, err)
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		return query.Upstream(address, err)
	}
	return query.Failure(address, err)
}

func (p *JavaProtocol) modernStatus(address string, js []byte, rtt time.Duration) (*query.Status, error) {
	var sj statusJSON
	if err := json.Unmarshal(js, &sj); err != nil {
		return nil, query.Upstream(address, fmt.Errorf("status JSON: %v", err))
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, query.Upstream(address, fmt.Errorf("status JSON: %v", err))
	}
	if !p.IncludeFavicon {
		delete(raw, "favicon")
	}
	st := &query.Status{
		Name: statusName(FlattenChat(sj.Description)), Version: sj.Version.Name,
		NumPlayers: sj.Players.Online, MaxPlayers: sj.Players.Max, Ping: rtt.Milliseconds(),
		Protocol: "minecraft", Players: []query.Player{}, Bots: []query.Player{}, Raw: raw,
	}
	for _, s := range sj.Players.Sample {
		st.Players = append(st.Players, query.Player{Name: s.Name, Raw: map[string]any{"id": s.ID}})
	}
	return st, nil
}

func legacyStatus(address string, s *wiremc.LegacyStatus, rtt time.Duration) *query.Status {
	raw := legacyRaw(s)
	return &query.Status{
		Name: statusName(string(s.MOTD)), Version: string(s.Version), NumPlayers: raw["online"].(int), MaxPlayers: raw["max"].(int),
		Ping: rtt.Milliseconds(), Protocol: "minecraft", Players: []query.Player{}, Bots: []query.Player{}, Raw: raw,
	}
}

// legacyRaw is the raw data of a legacy ping's answer: its fields, with
// "legacy": true.
func legacyRaw(s *wiremc.LegacyStatus) map[string]any {
	online, _ := strconv.Atoi(string(s.Online))
	maxp, _ := strconv.Atoi(string(s.Max))
	raw := map[string]any{"legacy": true, "motd": string(s.MOTD), "online": online, "max": maxp}
	if s.Protocol != nil {
		raw["protocol"], _ = strconv.Atoi(string(s.Protocol))
		raw["version"] = string(s.Version)
	}
	return raw
}

// statusName is a MOTD as GameDig names a Minecraft server: every run of
// white space (the line break of a two-line MOTD included) one space,
// then without § formatting codes. The MOTD as sent stays in raw.
func statusName(motd string) string {
	var b strings.Builder
	space := false
	for _, r := range motd {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return StripFormatting(b.String())
}

// ReadOnlyCommands is "raw": a status query changes nothing on a server.
func (p *JavaProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command answers "raw": the status JSON as the server sent it.
func (p *JavaProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if command != "raw" {
		return nil, query.Errorf(http.StatusNotFound, "minecraft has no command %q (it has raw)", command)
	}
	if len(args) != 0 {
		return nil, query.Errorf(http.StatusBadRequest, "the raw command takes no arguments")
	}
	dialAddr, host, port := p.resolve(ctx, address)
	deadline := p.deadline(ctx)
	js, _, err := p.exchange(ctx, dialAddr, host, port, deadline)
	if err != nil {
		// A server before 1.7 has no status JSON: its legacy answer's
		// fields, as the status's raw data has them.
		if ls, _, ok := p.legacyFallback(ctx, err, dialAddr, host, port, deadline); ok {
			return legacyRaw(ls), nil
		}
		return nil, failure(dialAddr, err)
	}
	if !json.Valid(js) {
		return nil, query.Upstream(address, errors.New("the status is not JSON"))
	}
	return json.RawMessage(js), nil
}

// maxChatDepth bounds how deeply chat components nest when flattened.
const maxChatDepth = 32

// FlattenChat returns the plain text of a chat component: a JSON string,
// an object with text (or translate) and extra, or an array of components.
func FlattenChat(raw json.RawMessage) string {
	var b strings.Builder
	flatten(&b, raw, 0)
	return b.String()
}

func flatten(b *strings.Builder, raw json.RawMessage, depth int) {
	if depth > maxChatDepth || len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			b.WriteString(s)
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) == nil {
			for _, part := range parts {
				flatten(b, part, depth+1)
			}
		}
	case '{':
		var c struct {
			Text      *string           `json:"text"`
			Translate string            `json:"translate"`
			Extra     []json.RawMessage `json:"extra"`
		}
		if json.Unmarshal(raw, &c) != nil {
			return
		}
		if c.Text != nil {
			b.WriteString(*c.Text)
		} else {
			b.WriteString(c.Translate)
		}
		for _, e := range c.Extra {
			flatten(b, e, depth+1)
		}
	}
}

// StripFormatting removes Minecraft's § formatting codes (§ and one
// character) from s.
func StripFormatting(s string) string {
	if !strings.ContainsRune(s, '§') {
		return s
	}
	var b strings.Builder
	skip := false
	for _, r := range s {
		switch {
		case skip:
			skip = false
		case r == '§':
			skip = true
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
