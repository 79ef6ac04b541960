package freeciv

import (
	"github.com/gamegate/gamegate/wire"
)

// LAN server discovery: a client asks the multicast group, servers answer
// the group with an announcement. Both are single UDP datagrams.
const (
	// LANVersion is the first byte of a request and of an announcement.
	LANVersion = 2
	// LANRequestPort is the UDP port a client's request goes to.
	LANRequestPort = 4555
	// LANAnnouncePort is the UDP port servers announce themselves to.
	LANAnnouncePort = 4556
	// MaxLANAnnouncement bounds an announcement datagram. The sources give
	// no bound; this one matches the largest ordinary packet, which every
	// honest announcement fits with room to spare.
	MaxLANAnnouncement = MaxLenPacket
)

// DecodeLANRequest checks that b is a LAN request: the single byte
// LANVersion.
func DecodeLANRequest(b []byte) error {
	switch {
	case len(b) == 0:
		return wire.NewDecodeError("version", 0, wire.ErrTruncated)
	case b[0] != LANVersion:
		return wire.NewDecodeError("version", 0, wire.ErrRange)
	case len(b) > 1:
		return wire.NewDecodeError("request", 1, wire.ErrTooLong)
	}
	return nil
}

// AppendLANRequest appends a LAN request.
func AppendLANRequest(b []byte) []byte { return append(b, LANVersion) }

// LANAnnouncement is a server's answer to a LAN request: the version byte,
// then seven NUL-terminated strings. Numbers travel as decimal text and are
// kept as sent.
type LANAnnouncement struct {
	Hostname []byte
	Port     []byte // the game port, e.g. "5556"
	Version  []byte // the server's version, e.g. "3.0.6"
	Status   []byte
	Players  []byte // the number of players
	Humans   []byte // the number of human players
	Message  []byte
}

// Decode parses an announcement datagram. The byte slices alias b. Each
// string is bounded only by the datagram, itself at most
// MaxLANAnnouncement bytes; bytes after the last string are refused.
func (a *LANAnnouncement) Decode(b []byte) error {
	if len(b) > MaxLANAnnouncement {
		return wire.NewDecodeError("announcement", MaxLANAnnouncement, wire.ErrTooLong)
	}
	r := NewDataReader(b)
	r.U8Range("version", LANVersion, LANVersion)
	a.Hostname = r.String("hostname", MaxLANAnnouncement)
	a.Port = r.String("port", MaxLANAnnouncement)
	a.Version = r.String("version", MaxLANAnnouncement)
	a.Status = r.String("status", MaxLANAnnouncement)
	a.Players = r.String("players", MaxLANAnnouncement)
	a.Humans = r.String("humans", MaxLANAnnouncement)
	a.Message = r.String("message", MaxLANAnnouncement)
	return endOfPacket(&r)
}

// Len is the encoded size of a.
func (a *LANAnnouncement) Len() int {
	return 1 + len(a.Hostname) + len(a.Port) + len(a.Version) + len(a.Status) +
		len(a.Players) + len(a.Humans) + len(a.Message) + 7
}

// AppendTo appends a as a datagram. It refuses a string containing a NUL
// and a datagram longer than MaxLANAnnouncement; on error b is returned
// unchanged.
func (a *LANAnnouncement) AppendTo(b []byte) ([]byte, error) {
	if a.Len() > MaxLANAnnouncement {
		return b, errStringLong
	}
	start := len(b)
	b = append(b, LANVersion)
	var err error
	for _, s := range [...][]byte{a.Hostname, a.Port, a.Version, a.Status, a.Players, a.Humans, a.Message} {
		if b, err = AppendString(b, s, MaxLANAnnouncement); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}
