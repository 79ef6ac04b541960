package freeciv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/wire/freeciv"
)

// ProbeCapability is a capability no server has: a JOIN_REQ carrying it is
// refused, and the refusal tells the server's version and capabilities
// without the probe joining the game.
const ProbeCapability = "+gamegate-probe"

// JoinResult is a server's JOIN_REPLY to a probe.
type JoinResult struct {
	CanJoin    bool   `json:"can_join"`
	Message    string `json:"message"`
	Capability string `json:"capability"`
	// Version is the server's version, when its message states it (a
	// refusal does: "Server version: 3.0.6 …").
	Version string `json:"version,omitempty"`
	ConnID  int    `json:"conn_id"`
	// ProbeCapability is the capability the probe sent.
	ProbeCapability string `json:"probe_capability"`
}

var versionInMessage = regexp.MustCompile(`Server version: ([0-9][0-9A-Za-z.+-]*)`)

// Prober asks Freeciv servers who they are with a JOIN_REQ.
type Prober struct {
	// Username sent in the JOIN_REQ. Default: gamegate-probe.
	Username string
	// Version sent in the JOIN_REQ. Default: 3.0.6.
	Major, Minor, Patch uint32
	// Timeout bounds one probe. Default: 3s.
	Timeout time.Duration
}

// Join connects to address, sends a JOIN_REQ with capability and returns
// the server's JOIN_REPLY. It reads the server's answer through the codec
// (the reply may arrive inside a compressed chunk) and disconnects as soon
// as the reply is read.
func (p *Prober) Join(ctx context.Context, address, capability string) (*JoinResult, error) {
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	user := p.Username
	if user == "" {
		user = "gamegate-probe"
	}
	major, minor, patch := p.Major, p.Minor, p.Patch
	if major == 0 && minor == 0 && patch == 0 {
		major, minor, patch = 3, 0, 6
	}
	req := freeciv.JoinReq{Username: []byte(user), Capability: []byte(capability), Major: major, Minor: minor, Patch: patch}
	b, err := req.AppendTo(nil)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(b); err != nil {
		return nil, err
	}
	var s freeciv.Splitter
	buf := make([]byte, 16<<10)
	for {
		n, err := conn.Read(buf)
		for q := buf[:n]; len(q) > 0; {
			k, werr := s.Write(q)
			q = q[k:]
			for {
				f, ferr := s.Next()
				if errors.Is(ferr, freeciv.ErrNeedMore) {
					break
				}
				if ferr != nil {
					return nil, &errProtocol{ferr}
				}
				if f.Type != freeciv.PacketServerJoinReply {
					continue
				}
				var r freeciv.JoinReply
				if err := r.Decode(f.Packet); err != nil {
					return nil, &errProtocol{err}
				}
				res := &JoinResult{CanJoin: r.YouCanJoin, Message: string(r.Message), Capability: string(r.Capability),
					ConnID: int(r.ConnID), ProbeCapability: capability}
				if m := versionInMessage.FindStringSubmatch(res.Message); m != nil {
					res.Version = m[1]
				}
				return res, nil
			}
			if werr != nil && k == 0 {
				return nil, &errProtocol{werr}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.DeadlineExceeded
			}
			return nil, fmt.Errorf("the server closed the connection before its JOIN_REPLY: %w", err)
		}
	}
}

type errProtocol struct{ err error }

func (e *errProtocol) Error() string { return "not a Freeciv answer: " + e.err.Error() }
func (e *errProtocol) Unwrap() error { return e.err }

// QueryProtocol is Freeciv as a query.Protocol. Status probes with
// ProbeCapability (the server refuses, so nothing joins, and says its
// version and capabilities); the "join" command probes with a real
// capability (the first argument, or JoinCapability) and reports whether
// such a client can join: when it can, the probe has joined the game, so
// join is not among the read-only commands. With LAN set, a status also carries the server's
// LAN announcement, and the "lan" command returns it.
type QueryProtocol struct {
	Prober Prober
	// LAN, if set, adds the server's LAN announcement (hostname, status,
	// players) to its status, and enables the "lan" command.
	LAN *LAN
	// JoinCapability is the capability the join command offers by default.
	// Default: +Freeciv-3.0-network.
	JoinCapability string
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "freeciv".
func (q *QueryProtocol) Name() string { return "freeciv" }

func (q *QueryProtocol) now() time.Time { return query.Now(q.Now) }

func mapError(address string, err error) error {
	var pe *errProtocol
	switch {
	case errors.As(err, &pe):
		return query.Upstream(address, pe.err)
	}
	return query.Failure(address, err)
}

// ReadOnlyCommands returns lan. Not join: a join probe whose capability the
// server accepts really joins the game (the server creates a player for
// it, taking an AI's place, until it drops the probe as lagging), so it is
// sent only where the server's command allow-list names it.
func (q *QueryProtocol) ReadOnlyCommands() []string { return []string{"lan"} }

// Status reports a server's version and capabilities, and with LAN set its
// announcement (asked at the same time as the probe).
func (q *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	type lanAnswer struct {
		res *LANResult
		err error
	}
	lanC := make(chan lanAnswer, 1)
	if q.LAN != nil {
		go func() {
			res, err := q.lan(ctx, address)
			lanC <- lanAnswer{res, err}
		}()
	}
	start := q.now()
	res, err := q.Prober.Join(ctx, address, ProbeCapability)
	if err != nil {
		return nil, mapError(address, err)
	}
	st := &query.Status{
		Version:  res.Version,
		Players:  []query.Player{},
		Bots:     []query.Player{},
		Ping:     q.now().Sub(start).Milliseconds(),
		Protocol: "freeciv",
		Raw: map[string]any{
			"capability": res.Capability,
			"message":    res.Message,
			"can_join":   res.CanJoin,
		},
	}
	st.SetAddress(address, 0) // the probe asks the game port itself
	if q.LAN != nil {
		if a := <-lanC; a.err == nil {
			st.Name, st.NumPlayers = a.res.Hostname, a.res.Players
			if st.Version == "" {
				st.Version = a.res.Version
			}
			st.Raw["lan"] = a.res
		} else {
			// Words only: the error may carry socket errors.
			st.Raw["lan_error"] = "the LAN query failed"
			if errors.Is(a.err, ErrNoAnnouncement) {
				st.Raw["lan_error"] = "no LAN announcement"
			}
		}
	}
	return st, nil
}

func (q *QueryProtocol) lan(ctx context.Context, address string) (*LANResult, error) {
	ap, err := netaddr.Resolve(ctx, address)
	if err != nil {
		return nil, err
	}
	return q.LAN.Query(ctx, ap.Addr(), int(ap.Port()))
}

// Command runs "join" (a joining probe) or, with LAN set, "lan" (the
// server's LAN announcement).
func (q *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if command == "lan" && q.LAN != nil {
		res, err := q.lan(ctx, address)
		if errors.Is(err, ErrNoAnnouncement) {
			return nil, &query.Error{HTTPStatus: http.StatusGatewayTimeout, Message: "no LAN announcement from the Freeciv server",
				Detail: fmt.Errorf("%s: %w", address, err)}
		}
		if err != nil {
			return nil, mapError(address, err)
		}
		return res, nil
	}
	switch command {
	case "join":
	case "lan":
		return nil, query.Errorf(http.StatusNotFound, "the lan command is not configured here: it needs the freeciv protocol's lan_group")
	default:
		return nil, query.Errorf(http.StatusNotFound, "the freeciv protocol has no command %q (it has status, join and, with lan_group, lan)", command)
	}
	capability := q.JoinCapability
	if capability == "" {
		capability = "+Freeciv-3.0-network"
	}
	if len(args) > 0 {
		capability = args[0]
	}
	if len(capability) >= freeciv.MaxLenCapstr {
		return nil, query.Errorf(http.StatusBadRequest, "capability longer than %d bytes", freeciv.MaxLenCapstr-1)
	}
	res, err := q.Prober.Join(ctx, address, capability)
	if err != nil {
		return nil, mapError(address, err)
	}
	return res, nil
}
