// Package master is the codec of the master-server protocol of the Quake 3
// / DarkPlaces family (as dpmaster speaks it), free of I/O.
//
// Every message is a datagram of four 0xFF bytes and ASCII:
//
//	heartbeat <protocol-string>\n                   server → master
//	getinfo <challenge>                             master → server
//	infoResponse\n\key\value\key\value…             server → master
//	getservers [<gamename>] <protocol> [filters]    client → master
//	getserversExt <gamename> <protocol> [filters]   client → master
//	getserversResponse \<ip4><port>… \EOT\0\0\0     master → client
//	getserversExtResponse \<ip4><port> /<ip6><port>… \EOT\0\0\0
//
// A list longer than one datagram spans several, each at most
// MaxResponseDatagram bytes; only the last ends with the EOT entry.
// Decoders alias their input; encoders append and allocate nothing when
// the slice has room.
package master

import (
	"bytes"
	"errors"
	"net/netip"

	"github.com/gamegate/gamegate/wire"
)

// Limits of what is sent and accepted.
const (
	// MaxResponseDatagram is the size of the largest list datagram sent:
	// dpmaster keeps each under 1400 bytes, below the path MTU of the
	// usual links, so no list datagram is fragmented.
	MaxResponseDatagram = 1400
	// MinChallenge and MaxChallenge bound the challenges accepted in a
	// getinfo.
	MinChallenge = 1
	MaxChallenge = 128
	// MaxInfo bounds the info string of an infoResponse (ioquake3's
	// MAX_INFO_STRING is 1024, DarkPlaces' 1400).
	MaxInfo = 4096
	// MaxGameName bounds a game name, in a query or an infoResponse.
	MaxGameName = 64
	// MaxQuery bounds a getservers or getserversExt request.
	MaxQuery = 512
	// MaxHeartbeat bounds a heartbeat.
	MaxHeartbeat = 256
	// MaxNumber bounds the numbers of an infoResponse and a query
	// (protocol, clients, sv_maxclients, gametype).
	MaxNumber = 1<<31 - 1
)

// Header starts every message.
const Header = "\xff\xff\xff\xff"

// Message names, as they follow the header.
const (
	cmdHeartbeat      = "heartbeat"
	cmdGetInfo        = "getinfo"
	cmdInfoResponse   = "infoResponse"
	cmdGetServers     = "getservers"
	cmdGetServersExt  = "getserversExt"
	cmdServersResp    = "getserversResponse"
	cmdServersExtResp = "getserversExtResponse"
)

// Kind says which message a datagram is.
type Kind uint8

// Kinds of message.
const (
	KindNone Kind = iota
	KindHeartbeat
	KindGetInfo
	KindInfoResponse
	KindGetServers
	KindGetServersExt
	KindGetServersResponse
	KindGetServersExtResponse
)

// String names the kind as it appears on the wire.
func (k Kind) String() string {
	switch k {
	case KindHeartbeat:
		return cmdHeartbeat
	case KindGetInfo:
		return cmdGetInfo
	case KindInfoResponse:
		return cmdInfoResponse
	case KindGetServers:
		return cmdGetServers
	case KindGetServersExt:
		return cmdGetServersExt
	case KindGetServersResponse:
		return cmdServersResp
	case KindGetServersExtResponse:
		return cmdServersExtResp
	}
	return "none"
}

// Errors of the decoders; a *wire.DecodeError wraps them with the field.
var (
	// ErrNotMaster reports a datagram that is not the message decoded.
	ErrNotMaster = errors.New("not this master-server message")
	// ErrChallenge reports a challenge with a character the protocol
	// forbids (outside 33–126, or one of \ / ; " %), or of a bad length.
	ErrChallenge = errors.New("invalid challenge")
	// ErrMissing reports an infoResponse without a key the master needs.
	ErrMissing = errors.New("missing key")
)

// Peek says which message b is from its first bytes, without decoding it:
// cheap enough to run on every datagram of a shared port.
func Peek(b []byte) Kind {
	if len(b) < len(Header)+len(cmdGetInfo) || string(b[:len(Header)]) != Header {
		return KindNone
	}
	b = b[len(Header):]
	switch b[0] {
	case 'h':
		if hasWord(b, cmdHeartbeat) {
			return KindHeartbeat
		}
	case 'i':
		if hasWord(b, cmdInfoResponse) {
			return KindInfoResponse
		}
	case 'g':
		switch {
		case hasWord(b, cmdGetServers):
			return KindGetServers
		case hasWord(b, cmdGetServersExt):
			return KindGetServersExt
		case hasPrefix(b, cmdServersResp):
			return KindGetServersResponse
		case hasPrefix(b, cmdServersExtResp):
			return KindGetServersExtResponse
		case hasWord(b, cmdGetInfo):
			return KindGetInfo
		}
	}
	return KindNone
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// hasWord reports whether b starts with the word s, followed by the end,
// a space or a line feed.
func hasWord(b []byte, s string) bool {
	if !hasPrefix(b, s) {
		return false
	}
	return len(b) == len(s) || b[len(s)] == ' ' || b[len(s)] == '\n'
}

// DecodeHeartbeat returns the protocol string of a heartbeat (such as
// "QuakeArena-1" or "DarkPlaces"), aliasing b. The closing line feed is
// optional; the protocol string must be printable and not empty.
func DecodeHeartbeat(b []byte) ([]byte, error) {
	if len(b) > MaxHeartbeat {
		return nil, wire.NewDecodeError("heartbeat", 0, wire.ErrTooLong)
	}
	if Peek(b) != KindHeartbeat {
		return nil, wire.NewDecodeError("heartbeat", 0, ErrNotMaster)
	}
	off := len(Header) + len(cmdHeartbeat)
	rest := b[off:]
	if len(rest) > 0 && rest[len(rest)-1] == '\n' {
		rest = rest[:len(rest)-1]
	}
	if len(rest) < 2 || rest[0] != ' ' {
		return nil, wire.NewDecodeError("protocol", off, wire.ErrTruncated)
	}
	rest = rest[1:]
	for i, c := range rest {
		if c <= ' ' || c > '~' {
			return nil, wire.NewDecodeError("protocol", off+1+i, wire.ErrRange)
		}
	}
	return rest, nil
}

// AppendHeartbeat appends a heartbeat with the given protocol string.
func AppendHeartbeat(b []byte, protocol string) []byte {
	b = append(b, Header...)
	b = append(b, cmdHeartbeat+" "...)
	b = append(b, protocol...)
	return append(b, '\n')
}

// ValidChallengeByte reports whether c may appear in a challenge: printable
// ASCII 33–126 except \ / ; " and %.
func ValidChallengeByte(c byte) bool {
	if c < 33 || c > 126 {
		return false
	}
	switch c {
	case '\\', '/', ';', '"', '%':
		return false
	}
	return true
}

func validChallenge(c []byte) bool {
	if len(c) < MinChallenge || len(c) > MaxChallenge {
		return false
	}
	for _, x := range c {
		if !ValidChallengeByte(x) {
			return false
		}
	}
	return true
}

// GetInfoLen is the length of a getinfo carrying a challenge of n bytes.
func GetInfoLen(n int) int { return len(Header) + len(cmdGetInfo) + 1 + n }

// AppendGetInfo appends a getinfo carrying challenge.
func AppendGetInfo(b, challenge []byte) ([]byte, error) {
	if !validChallenge(challenge) {
		return b, ErrChallenge
	}
	b = append(b, Header...)
	b = append(b, cmdGetInfo+" "...)
	return append(b, challenge...), nil
}

// DecodeGetInfo returns the challenge of a getinfo, aliasing b.
func DecodeGetInfo(b []byte) ([]byte, error) {
	if Peek(b) != KindGetInfo {
		return nil, wire.NewDecodeError("getinfo", 0, ErrNotMaster)
	}
	off := len(Header) + len(cmdGetInfo)
	rest := bytes.TrimSuffix(b[off:], []byte{'\n'})
	if len(rest) < 1+MinChallenge || rest[0] != ' ' {
		return nil, wire.NewDecodeError("challenge", off, wire.ErrTruncated)
	}
	if !validChallenge(rest[1:]) {
		return nil, wire.NewDecodeError("challenge", off+1, ErrChallenge)
	}
	return rest[1:], nil
}

// Info is the part of an infoResponse a master uses. Decode fills it,
// aliasing the datagram.
type Info struct {
	// Raw is the whole info string, \key\value…, for Get.
	Raw []byte
	// Challenge is the challenge the server echoes.
	Challenge []byte
	// GameName is the game's name; empty when the server sent none (Quake
	// III Arena: see GameName).
	GameName []byte
	// Protocol is the game protocol's number.
	Protocol int
	// Clients is the number of clients (bots included, as ioquake3 counts
	// them) and MaxClients the server's sv_maxclients (at least 1).
	Clients, MaxClients int
	// GameType is the game type; 0 when the server sent none.
	GameType int
}

// DefaultGameName is the game name of a server or a getservers query that
// gives none: Quake III Arena's, as dpmaster has it.
const DefaultGameName = "Quake3Arena"

// Name returns the game name, DefaultGameName when none was sent.
func (in *Info) Name() []byte {
	if len(in.GameName) == 0 {
		return []byte(DefaultGameName)
	}
	return in.GameName
}

// Decode parses an infoResponse. It requires the keys dpmaster requires:
// challenge, sv_maxclients (not 0), protocol and clients; gamename, when
// present, must have no white space. The first of repeated keys counts.
func (in *Info) Decode(b []byte) error {
	*in = Info{}
	off := len(Header) + len(cmdInfoResponse)
	if Peek(b) != KindInfoResponse || len(b) == off || b[off] != '\n' {
		return wire.NewDecodeError("infoResponse", 0, ErrNotMaster)
	}
	off++
	info := b[off:]
	if len(info) > 0 && info[len(info)-1] == '\n' {
		info = info[:len(info)-1]
	}
	if len(info) > MaxInfo {
		return wire.NewDecodeError("info", off, wire.ErrTooLong)
	}
	in.Raw = info
	const (
		seenChallenge = 1 << iota
		seenMaxClients
		seenProtocol
		seenClients
		seenGameName
		seenGameType
	)
	seen := 0
	err := eachPair(info, off, func(k, v []byte, at int) error {
		var n int
		var ok bool
		switch string(k) {
		case "challenge":
			if seen&seenChallenge != 0 {
				return nil
			}
			seen |= seenChallenge
			if !validChallenge(v) {
				return wire.NewDecodeError("challenge", at, ErrChallenge)
			}
			in.Challenge = v
			return nil
		case "gamename":
			if seen&seenGameName != 0 {
				return nil
			}
			seen |= seenGameName
			if len(v) > MaxGameName || bytes.ContainsAny(v, " \t\r\n") {
				return wire.NewDecodeError("gamename", at, wire.ErrRange)
			}
			in.GameName = v
			return nil
		case "sv_maxclients":
			if seen&seenMaxClients != 0 {
				return nil
			}
			seen |= seenMaxClients
			n, ok = parseNumber(v)
			if !ok || n == 0 {
				return wire.NewDecodeError("sv_maxclients", at, wire.ErrRange)
			}
			in.MaxClients = n
		case "protocol":
			if seen&seenProtocol != 0 {
				return nil
			}
			seen |= seenProtocol
			if in.Protocol, ok = parseNumber(v); !ok {
				return wire.NewDecodeError("protocol", at, wire.ErrRange)
			}
		case "clients":
			if seen&seenClients != 0 {
				return nil
			}
			seen |= seenClients
			if in.Clients, ok = parseNumber(v); !ok {
				return wire.NewDecodeError("clients", at, wire.ErrRange)
			}
		case "gametype":
			if seen&seenGameType != 0 {
				return nil
			}
			seen |= seenGameType
			if in.GameType, ok = parseNumber(v); !ok {
				return wire.NewDecodeError("gametype", at, wire.ErrRange)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case seen&seenChallenge == 0:
		return wire.NewDecodeError("challenge", off, ErrMissing)
	case seen&seenMaxClients == 0:
		return wire.NewDecodeError("sv_maxclients", off, ErrMissing)
	case seen&seenProtocol == 0:
		return wire.NewDecodeError("protocol", off, ErrMissing)
	case seen&seenClients == 0:
		return wire.NewDecodeError("clients", off, ErrMissing)
	}
	return nil
}

// Get returns the value of key in the info string (the first, if
// repeated), aliasing it.
func (in *Info) Get(key string) ([]byte, bool) { return InfoValue(in.Raw, key) }

// InfoValue returns the value of key in an info string \key\value…, the
// first if repeated. A malformed info string has no values.
func InfoValue(info []byte, key string) ([]byte, bool) {
	var val []byte
	found := false
	_ = eachPair(info, 0, func(k, v []byte, _ int) error {
		if !found && string(k) == key {
			val, found = v, true
		}
		return nil
	})
	return val, found
}

// eachPair calls fn for each key and value of an info string, with the
// key's offset (base is the info string's own); it stops at fn's first
// error. An info string is empty or starts with a backslash, and has a
// value for each key.
func eachPair(info []byte, base int, fn func(k, v []byte, at int) error) error {
	if len(info) == 0 {
		return nil
	}
	if info[0] != '\\' {
		return wire.NewDecodeError("info", base, wire.ErrMagic)
	}
	i := 1
	for i <= len(info) {
		kEnd := bytes.IndexByte(info[i:], '\\')
		if kEnd < 0 {
			return wire.NewDecodeError("info", base+i, wire.ErrTruncated)
		}
		k := info[i : i+kEnd]
		vStart := i + kEnd + 1
		vEnd := bytes.IndexByte(info[vStart:], '\\')
		if vEnd < 0 {
			vEnd = len(info) - vStart
		}
		if err := fn(k, info[vStart:vStart+vEnd], base+i); err != nil {
			return err
		}
		i = vStart + vEnd + 1
	}
	return nil
}

// parseNumber parses a decimal number in [0, MaxNumber].
func parseNumber(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= MaxNumber
}

// AppendInfoResponse appends an infoResponse carrying the info string
// info (\key\value…), as a game server sends it.
func AppendInfoResponse(b, info []byte) []byte {
	b = append(b, Header...)
	b = append(b, cmdInfoResponse+"\n"...)
	return append(b, info...)
}

// NoGameType is Query.GameType when the query has no game type filter.
const NoGameType = -1

// Query is a getservers or getserversExt request. Decode fills it,
// aliasing the datagram.
type Query struct {
	// Ext is set for getserversExt.
	Ext bool
	// GameName is the game asked for; empty for a getservers without one
	// (Quake III Arena: see Name).
	GameName []byte
	// Protocol is the game protocol's number.
	Protocol int
	// Empty and Full ask for empty and full servers as well.
	Empty, Full bool
	// IPv4 and IPv6 ask for servers of that address family
	// (getserversExt); neither means both.
	IPv4, IPv6 bool
	// GameType is the game type asked for, or NoGameType.
	GameType int
}

// Name returns the game name asked for, DefaultGameName when none was.
func (q *Query) Name() []byte {
	if len(q.GameName) == 0 {
		return []byte(DefaultGameName)
	}
	return q.GameName
}

// WantsIPv4 and WantsIPv6 report whether servers of that family are asked
// for: getservers lists IPv4 servers only; getserversExt lists the
// families named, or both when none is.
func (q *Query) WantsIPv4() bool { return !q.Ext || q.IPv4 || !q.IPv6 }

// WantsIPv6 reports whether IPv6 servers are asked for.
func (q *Query) WantsIPv6() bool { return q.Ext && (q.IPv6 || !q.IPv4) }

// Decode parses a getservers or getserversExt request. Filters it does
// not know are ignored, as dpmaster ignores them; "gametype=N" and its
// shortcuts ffa, tourney, team and ctf set GameType (the last given
// counts).
func (q *Query) Decode(b []byte) error {
	*q = Query{GameType: NoGameType}
	if len(b) > MaxQuery {
		return wire.NewDecodeError("getservers", 0, wire.ErrTooLong)
	}
	off := len(Header)
	switch Peek(b) {
	case KindGetServers:
		off += len(cmdGetServers)
	case KindGetServersExt:
		q.Ext = true
		off += len(cmdGetServersExt)
	default:
		return wire.NewDecodeError("getservers", 0, ErrNotMaster)
	}
	field := 0 // 0: game name or protocol; 1: protocol; 2: filters
	for i := off; i < len(b); {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		start := i
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		tok := b[start:i]
		if len(tok) == 0 {
			break
		}
		switch field {
		case 0:
			if n, ok := parseNumber(tok); ok && !q.Ext {
				q.Protocol, field = n, 2
				continue
			}
			if len(tok) > MaxGameName {
				return wire.NewDecodeError("gamename", start, wire.ErrTooLong)
			}
			q.GameName, field = tok, 1
		case 1:
			n, ok := parseNumber(tok)
			if !ok {
				return wire.NewDecodeError("protocol", start, wire.ErrRange)
			}
			q.Protocol, field = n, 2
		default:
			q.filter(tok)
		}
	}
	if field < 2 {
		return wire.NewDecodeError("protocol", len(b), wire.ErrTruncated)
	}
	return nil
}

func (q *Query) filter(tok []byte) {
	switch string(tok) {
	case "empty":
		q.Empty = true
	case "full":
		q.Full = true
	case "ipv4":
		q.IPv4 = true
	case "ipv6":
		q.IPv6 = true
	case "ffa":
		q.GameType = 0
	case "tourney":
		q.GameType = 1
	case "team":
		q.GameType = 3
	case "ctf":
		q.GameType = 4
	default:
		if v, ok := bytes.CutPrefix(tok, []byte("gametype=")); ok {
			if n, ok := parseNumber(v); ok {
				q.GameType = n
			}
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == 0 }

// AppendTo appends q as a request.
func (q *Query) AppendTo(b []byte) []byte {
	b = append(b, Header...)
	if q.Ext {
		b = append(b, cmdGetServersExt...)
	} else {
		b = append(b, cmdGetServers...)
	}
	if len(q.GameName) > 0 || q.Ext {
		b = append(b, ' ')
		b = append(b, q.Name()...)
	}
	b = append(b, ' ')
	b = appendNumber(b, q.Protocol)
	if q.GameType != NoGameType {
		b = append(b, " gametype="...)
		b = appendNumber(b, q.GameType)
	}
	if q.Empty {
		b = append(b, " empty"...)
	}
	if q.Full {
		b = append(b, " full"...)
	}
	if q.IPv4 {
		b = append(b, " ipv4"...)
	}
	if q.IPv6 {
		b = append(b, " ipv6"...)
	}
	return b
}

func appendNumber(b []byte, n int) []byte {
	if n >= 10 {
		b = appendNumber(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// Entry sizes of a server list, separator included.
const (
	EntryLenIPv4 = 1 + 4 + 2
	EntryLenIPv6 = 1 + 16 + 2
	// EOTLen is the end-of-list entry, \EOT\0\0\0.
	EOTLen = 7
)

const eot = "\\EOT\x00\x00\x00"

// ResponseHeaderLen is the length of a list datagram's header.
func ResponseHeaderLen(ext bool) int {
	if ext {
		return len(Header) + len(cmdServersExtResp)
	}
	return len(Header) + len(cmdServersResp)
}

// AppendResponseHeader starts a list datagram, getserversResponse or
// getserversExtResponse.
func AppendResponseHeader(b []byte, ext bool) []byte {
	b = append(b, Header...)
	if ext {
		return append(b, cmdServersExtResp...)
	}
	return append(b, cmdServersResp...)
}

// EntryLen is the length of addr's entry in a list.
func EntryLen(addr netip.AddrPort) int {
	if addr.Addr().Unmap().Is4() {
		return EntryLenIPv4
	}
	return EntryLenIPv6
}

// AppendEntry appends addr to a list datagram: \ and 4 bytes of address
// for IPv4, / and 16 for IPv6 (getserversExtResponse only), then the port,
// big-endian.
func AppendEntry(b []byte, addr netip.AddrPort) []byte {
	ip := addr.Addr().Unmap()
	if ip.Is4() {
		a := ip.As4()
		b = append(b, '\\', a[0], a[1], a[2], a[3])
	} else {
		a := ip.As16()
		b = append(b, '/')
		b = append(b, a[:]...)
	}
	return append(b, byte(addr.Port()>>8), byte(addr.Port()))
}

// AppendEOT ends the last datagram of a list.
func AppendEOT(b []byte) []byte { return append(b, eot...) }

// DecodeResponse appends the servers of a list datagram to dst and
// reports whether it was an Ext response and whether it ends the list.
// An EOT entry must be the datagram's last; the short "\EOT" of id's own
// master is accepted too. IPv6 entries are accepted in Ext responses only.
func DecodeResponse(b []byte, dst []netip.AddrPort) ([]netip.AddrPort, bool, bool, error) {
	var ext bool
	var i int
	switch Peek(b) {
	case KindGetServersResponse:
		i = ResponseHeaderLen(false)
	case KindGetServersExtResponse:
		ext, i = true, ResponseHeaderLen(true)
	default:
		return dst, false, false, wire.NewDecodeError("getserversResponse", 0, ErrNotMaster)
	}
	if len(b) > MaxResponse {
		return dst, ext, false, wire.NewDecodeError("getserversResponse", 0, wire.ErrTooLong)
	}
	for i < len(b) {
		rest := b[i:]
		switch {
		case string(rest) == eot || string(rest) == eot[:4]:
			return dst, ext, true, nil
		case rest[0] == '\\' && len(rest) >= EntryLenIPv4:
			ip := netip.AddrFrom4([4]byte(rest[1:5]))
			dst = append(dst, netip.AddrPortFrom(ip, uint16(rest[5])<<8|uint16(rest[6])))
			i += EntryLenIPv4
		case rest[0] == '/' && ext && len(rest) >= EntryLenIPv6:
			ip := netip.AddrFrom16([16]byte(rest[1:17]))
			dst = append(dst, netip.AddrPortFrom(ip, uint16(rest[17])<<8|uint16(rest[18])))
			i += EntryLenIPv6
		case rest[0] == '\\' || (rest[0] == '/' && ext):
			return dst, ext, false, wire.NewDecodeError("entry", i, wire.ErrTruncated)
		default:
			return dst, ext, false, wire.NewDecodeError("entry", i, wire.ErrMagic)
		}
	}
	return dst, ext, false, nil
}

// MaxResponse bounds a list datagram accepted by DecodeResponse: a UDP
// payload.
const MaxResponse = 65507
