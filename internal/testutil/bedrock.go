package testutil

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
)

// raknetMagic is RakNet's offline message ID. The Bedrock helpers build and
// read datagrams byte by byte from the protocol's layout, not with the
// codec under test.
var raknetMagic = []byte{0x00, 0xFF, 0xFF, 0x00, 0xFE, 0xFE, 0xFE, 0xFE, 0xFD, 0xFD, 0xFD, 0xFD, 0x12, 0x34, 0x56, 0x78}

// ServeBedrock answers RakNet unconnected pings on a fresh loopback socket
// as a Minecraft Bedrock server does, with a pong echoing the ping's time
// and carrying advertisement (the text after the header, as sent), and
// counts the pings. Anything else, a ping without the magic included, is
// ignored.
func ServeBedrock(t testing.TB, serverGUID int64, advertisement string) (netip.AddrPort, *atomic.Int64) {
	t.Helper()
	var pings atomic.Int64
	addr := ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		// 01 (or 02), int64 time, magic, int64 client GUID.
		if len(req) < 33 || req[0] != 0x01 && req[0] != 0x02 || !bytes.Equal(req[9:25], raknetMagic) {
			return nil
		}
		pings.Add(1)
		return [][]byte{BedrockPong(t, int64(binary.BigEndian.Uint64(req[1:9])), serverGUID, advertisement)}
	})
	return addr, &pings
}

// BedrockPong returns an unconnected pong carrying advertisement as given:
// 1C, int64 time, int64 server GUID, magic, uint16 length, advertisement.
func BedrockPong(t testing.TB, time, serverGUID int64, advertisement string) []byte {
	t.Helper()
	if len(advertisement) > 0xFFFF {
		t.Fatalf("BedrockPong: an advertisement of %d bytes does not fit", len(advertisement))
	}
	b := []byte{0x1C}
	b = binary.BigEndian.AppendUint64(b, uint64(time))
	b = binary.BigEndian.AppendUint64(b, uint64(serverGUID))
	b = append(b, raknetMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(advertisement)))
	return append(b, advertisement...)
}
