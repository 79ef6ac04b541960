package freeciv

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire/freeciv"
)

// LAN is the Freeciv LAN announcement query: one byte to the group on the
// request port, and every server on the LAN that announces itself answers
// to the group on the answer port. It only reaches servers on the gateway's
// own LAN (or host).
type LAN struct {
	// Group is where requests go and answers arrive: a multicast group
	// (Freeciv's default is 225.1.1.1) or, for a server whose
	// FREECIV_MULTICAST_GROUP names a unicast address, that address.
	Group netip.Addr
	// RequestPort and AnswerPort. Default: 4555 and 4556.
	RequestPort, AnswerPort int
	// Interface to join the multicast group on. Default: the system's.
	Interface *net.Interface
	// Wait bounds how long answers are awaited. Default: 1s.
	Wait time.Duration
}

// LANResult is a server's LAN announcement.
type LANResult struct {
	Hostname string `json:"hostname"`
	Port     int    `json:"port"`
	Version  string `json:"version"`
	Status   string `json:"status"`
	Players  int    `json:"players"`
	Humans   int    `json:"humans"`
	Message  string `json:"message"`
	From     string `json:"from"`
}

// ErrNoAnnouncement is the error when no server with the asked port
// answered in time.
var ErrNoAnnouncement = errors.New("no LAN announcement for that server")

func (l *LAN) listen() (net.PacketConn, error) {
	port := l.AnswerPort
	if port == 0 {
		port = freeciv.LANAnnouncePort
	}
	if l.Group.IsMulticast() {
		return net.ListenMulticastUDP("udp", l.Interface, &net.UDPAddr{IP: l.Group.AsSlice(), Port: port})
	}
	// A unicast group: several queries may listen at once, as they may on
	// a multicast group.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return lc.ListenPacket(context.Background(), "udp", netip.AddrPortFrom(l.Group, uint16(port)).String())
}

// Query asks the LAN and returns the announcement of the server whose game
// port is gamePort (from host, if host is valid).
func (l *LAN) Query(ctx context.Context, host netip.Addr, gamePort int) (*LANResult, error) {
	conn, err := l.listen()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	wait := l.Wait
	if wait == 0 {
		wait = time.Second
	}
	defer query.BoundDeadline(ctx, conn, wait)()
	reqPort := l.RequestPort
	if reqPort == 0 {
		reqPort = freeciv.LANRequestPort
	}
	out, err := net.Dial("udp", netip.AddrPortFrom(l.Group, uint16(reqPort)).String())
	if err != nil {
		return nil, err
	}
	defer out.Close()
	if _, err := out.Write(freeciv.AppendLANRequest(nil)); err != nil {
		return nil, err
	}
	buf := make([]byte, freeciv.MaxLANAnnouncement+1)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, ErrNoAnnouncement
		}
		var a freeciv.LANAnnouncement
		if a.Decode(buf[:n]) != nil {
			continue
		}
		port, _ := strconv.Atoi(string(a.Port))
		if port != gamePort {
			continue
		}
		if ua, ok := from.(*net.UDPAddr); ok && host.IsValid() && !host.IsUnspecified() {
			if ip, _ := netip.AddrFromSlice(ua.IP); ip.Unmap() != host.Unmap() && !host.IsLoopback() {
				continue
			}
		}
		players, _ := strconv.Atoi(string(a.Players))
		humans, _ := strconv.Atoi(string(a.Humans))
		return &LANResult{
			Hostname: string(a.Hostname), Port: port, Version: string(a.Version), Status: string(a.Status),
			Players: players, Humans: humans, Message: string(a.Message), From: from.String(),
		}, nil
	}
}
