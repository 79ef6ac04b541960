// Package openttd is the codec of OpenTTD's server query, free of I/O: the
// game-info request a client sends over the game's TCP port and the
// server's NetworkGameInfo answer (versions 1 to 7), as OpenTTD's own
// network_game_info.cpp writes and reads them.
//
// A packet is a little-endian uint16 size (the whole packet's, these two
// bytes included), a type byte and the payload. PACKET_CLIENT_GAME_INFO (7)
// has no payload; PACKET_SERVER_GAME_INFO (6) carries the game-info
// version, then the fields each version added, newest first: a version-N
// answer holds the fields of versions N down to 1.
package openttd

import (
	"encoding/binary"
	"time"

	"github.com/gamegate/gamegate/wire"
)

// Packet layout, types and bounds.
const (
	// HeaderLen is a packet's size and type.
	HeaderLen = 3
	// MaxPacketSize is the largest packet OpenTTD sends over TCP
	// (its TCP_MTU).
	MaxPacketSize = 32767
	// TypeServerGameInfo is PACKET_SERVER_GAME_INFO, the answer.
	TypeServerGameInfo = 6
	// TypeClientGameInfo is PACKET_CLIENT_GAME_INFO, the request.
	TypeClientGameInfo = 7
	// MaxInfoVersion is the newest NetworkGameInfo version this package
	// reads; a newer one adds fields before those it knows and is refused.
	MaxInfoVersion = 7
	// DefaultPort is OpenTTD's default server port (TCP for games and
	// queries).
	DefaultPort = 3979
	// DaysTillOriginalBaseYear is the day number of 1 January 1920, the
	// origin of the 16-bit dates of game-info versions 1 and 2.
	DaysTillOriginalBaseYear = 365*1920 + 1920/4 - 1920/100 + 1920/400
)

// The NewGRF serialisation types of version 6 and later.
const (
	// GRFIDMD5 sends each NewGRF's ID and MD5 sum.
	GRFIDMD5 = 0
	// GRFIDMD5Name adds each NewGRF's name.
	GRFIDMD5Name = 1
	// GRFLookupID sends an index into a table that only OpenTTD's game
	// coordinator carries; a direct query never gets it, and it is
	// refused.
	GRFLookupID = 2
)

// AppendRequest appends PACKET_CLIENT_GAME_INFO to b.
func AppendRequest(b []byte) []byte {
	return append(b, HeaderLen, 0, TypeClientGameInfo)
}

// PacketSize returns the size the packet at the start of b declares, when
// b holds its header: what a stream reader needs to frame it. A size below
// HeaderLen or above MaxPacketSize is not a packet (ok false).
func PacketSize(b []byte) (size, typ int, ok bool) {
	if len(b) < HeaderLen {
		return 0, 0, false
	}
	size = int(binary.LittleEndian.Uint16(b))
	return size, int(b[2]), size >= HeaderLen && size <= MaxPacketSize
}

// GRF is a NewGRF the server uses.
type GRF struct {
	ID      uint32
	MD5     [16]byte
	Name    []byte // with GRFIDMD5Name only
	HasName bool
}

// GameInfo is PACKET_SERVER_GAME_INFO. Fields a version does not carry are
// zero. Decode aliases its input in the byte slices.
type GameInfo struct {
	InfoVersion uint8
	// Version 7.
	TicksPlaying uint64
	// Version 6: GRFIDMD5 or GRFIDMD5Name.
	GRFSerialisation uint8
	// Version 5: the game script's, -1 (0xFFFFFFFF) and empty for none.
	GameScriptVersion uint32
	GameScriptName    []byte
	// Version 4.
	GRFs []GRF
	// Version 3 (days since 1 January of year 0; versions 1 and 2 send
	// them as 16-bit days since 1920, which Decode converts).
	CalendarDate, StartDate uint32
	// Version 2. MaxSpectators is the client limit since OpenTTD 12.
	MaxCompanies, NumCompanies, MaxSpectators uint8
	// Version 1.
	Name, Revision []byte
	Language       uint8 // before version 6
	Password       bool
	MaxClients     uint8
	NumClients     uint8
	NumSpectators  uint8
	MapName        []byte // before version 6
	MapWidth       uint16
	MapHeight      uint16
	Landscape      uint8
	Dedicated      bool
}

// Decode parses a whole PACKET_SERVER_GAME_INFO packet: its declared size
// must be len(b), every field of its version must be present, and nothing
// may follow them.
func (g *GameInfo) Decode(b []byte) error {
	grfs := g.GRFs[:0]
	*g = GameInfo{GRFs: grfs}
	r := wire.NewReader(b)
	size := r.U16LE("size")
	if r.Err() == nil && (int(size) != len(b) || len(b) > MaxPacketSize) {
		return wire.NewDecodeError("size", 0, wire.ErrRange)
	}
	if typ := r.U8("type"); r.Err() == nil && typ != TypeServerGameInfo {
		return wire.NewDecodeError("type", 2, wire.ErrMagic)
	}
	v := r.U8Range("game info version", 1, MaxInfoVersion)
	g.InfoVersion = v
	if v >= 7 {
		g.TicksPlaying = r.U64LE("ticks playing")
	}
	if v >= 6 {
		g.GRFSerialisation = r.U8Range("newgrf serialisation", GRFIDMD5, GRFIDMD5Name)
	}
	if v >= 5 {
		g.GameScriptVersion = r.U32LE("game script version")
		g.GameScriptName = r.CString("game script name")
	}
	if v >= 4 {
		n := int(r.U8("newgrf count"))
		for i := 0; i < n && r.Err() == nil; i++ {
			var grf GRF
			grf.ID = r.U32LE("newgrf id")
			copy(grf.MD5[:], r.Bytes("newgrf md5", len(grf.MD5)))
			if g.GRFSerialisation == GRFIDMD5Name {
				grf.Name, grf.HasName = r.CString("newgrf name"), true
			}
			g.GRFs = append(g.GRFs, grf)
		}
	}
	if v >= 3 {
		g.CalendarDate = r.U32LE("calendar date")
		g.StartDate = r.U32LE("start date")
	}
	if v >= 2 {
		g.MaxCompanies = r.U8("max companies")
		g.NumCompanies = r.U8("companies")
		g.MaxSpectators = r.U8("max spectators")
	}
	g.Name = r.CString("server name")
	g.Revision = r.CString("server revision")
	if v < 6 {
		g.Language = r.U8("language")
	}
	g.Password = r.U8("password") != 0
	g.MaxClients = r.U8("max clients")
	g.NumClients = r.U8("clients")
	g.NumSpectators = r.U8("spectators")
	if v < 3 {
		g.CalendarDate = DaysTillOriginalBaseYear + uint32(r.U16LE("calendar date"))
		g.StartDate = DaysTillOriginalBaseYear + uint32(r.U16LE("start date"))
	}
	if v < 6 {
		g.MapName = r.CString("map name")
	}
	g.MapWidth = r.U16LE("map width")
	g.MapHeight = r.U16LE("map height")
	g.Landscape = r.U8("landscape")
	g.Dedicated = r.U8("dedicated") != 0
	if err := r.Err(); err != nil {
		return err
	}
	if r.Len() != 0 {
		return wire.NewDecodeError("end of packet", r.Offset(), wire.ErrTooLong)
	}
	return nil
}

// Len returns the length of the packet AppendTo writes.
func (g *GameInfo) Len() int {
	n, _ := g.AppendTo(nil)
	return len(n)
}

// AppendTo appends g as a PACKET_SERVER_GAME_INFO packet of its
// InfoVersion. Strings must hold no NUL, dates of versions 1 and 2 must
// lie within their 16 bits, and the packet within MaxPacketSize.
func (g *GameInfo) AppendTo(b []byte) ([]byte, error) {
	start := len(b)
	v := g.InfoVersion
	if v < 1 || v > MaxInfoVersion || len(g.GRFs) > 255 || v >= 6 && g.GRFSerialisation > GRFIDMD5Name {
		return b, wire.ErrRange
	}
	b = append(b, 0, 0, TypeServerGameInfo, v)
	if v >= 7 {
		b = binary.LittleEndian.AppendUint64(b, g.TicksPlaying)
	}
	if v >= 6 {
		b = append(b, g.GRFSerialisation)
	}
	var err error
	str := func(s []byte) {
		for _, c := range s {
			if c == 0 {
				err = wire.ErrRange
			}
		}
		b = append(append(b, s...), 0)
	}
	if v >= 5 {
		b = binary.LittleEndian.AppendUint32(b, g.GameScriptVersion)
		str(g.GameScriptName)
	}
	if v >= 4 {
		b = append(b, uint8(len(g.GRFs)))
		for _, grf := range g.GRFs {
			b = binary.LittleEndian.AppendUint32(b, grf.ID)
			b = append(b, grf.MD5[:]...)
			if v >= 6 && g.GRFSerialisation == GRFIDMD5Name {
				str(grf.Name)
			}
		}
	}
	if v >= 3 {
		b = binary.LittleEndian.AppendUint32(b, g.CalendarDate)
		b = binary.LittleEndian.AppendUint32(b, g.StartDate)
	}
	if v >= 2 {
		b = append(b, g.MaxCompanies, g.NumCompanies, g.MaxSpectators)
	}
	str(g.Name)
	str(g.Revision)
	if v < 6 {
		b = append(b, g.Language)
	}
	b = append(b, bit(g.Password), g.MaxClients, g.NumClients, g.NumSpectators)
	if v < 3 {
		for _, d := range []uint32{g.CalendarDate, g.StartDate} {
			if d < DaysTillOriginalBaseYear || d-DaysTillOriginalBaseYear > 0xFFFF {
				err = wire.ErrRange
			}
			b = binary.LittleEndian.AppendUint16(b, uint16(d-DaysTillOriginalBaseYear))
		}
	}
	if v < 6 {
		str(g.MapName)
	}
	b = binary.LittleEndian.AppendUint16(b, g.MapWidth)
	b = binary.LittleEndian.AppendUint16(b, g.MapHeight)
	b = append(b, g.Landscape, bit(g.Dedicated))
	if n := len(b) - start; n > MaxPacketSize {
		err = wire.ErrTooLong
	} else {
		binary.LittleEndian.PutUint16(b[start:], uint16(n))
	}
	if err != nil {
		return b[:start], err
	}
	return b, nil
}

func bit(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// yearZero is OpenTTD's day 0: 1 January of year 0 of the proleptic
// Gregorian calendar.
var yearZero = time.Date(0, time.January, 1, 0, 0, 0, 0, time.UTC)

// Date returns the calendar date of an OpenTTD day number (days since
// 1 January of year 0).
func Date(days uint32) (year int, month time.Month, day int) {
	return yearZero.AddDate(0, 0, int(days)).Date()
}
