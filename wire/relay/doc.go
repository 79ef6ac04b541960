// Package relay encodes and decodes the relay message protocol: the UDP
// messages a game client exchanges with a relay server to bind its address to
// an allocation, connect to a host, and pass game traffic to its peers
// without knowing their addresses.
//
// # Layouts
//
// Every message starts with the same 4-byte header, then a body whose layout
// its type fixes. Sizes are of the whole message, header included:
//
//	header  0xDA 0x72 | version u8 (0) | type u8
//
//	type  name             size  body after the header
//	 0    BIND             40+L  accept mode u8 | nonce u16 | L u8 | connection data [L] | HMAC [32]
//	 1    BIND_RECEIVED    4     (none)
//	 2    PING             22    allocation ID [16] | number u16
//	 3    CONNECT_REQUEST  21+L  allocation ID [16] | L u8 | to connection data [L]
//	 6    ACCEPTED         36    from [16] | to [16]
//	 8    REJECTED         36    from [16] | to [16]
//	 9    DISCONNECT       36    from [16] | to [16]
//	10    RELAY            38+N  from [16] | to [16] | N u16 big-endian | content [N]
//	11    CLOSE            20    allocation ID [16]
//	12    ERROR            21    allocation ID [16] | error code u8
//
// Allocation IDs are the 16 bytes of a UUID in RFC 4122 order. Types 4, 5 and
// 7 are reserved and decode as unknown ([ErrType]).
//
// Every message is exactly its size: the decoders refuse a missing byte
// ([wire.ErrTruncated], naming the field) and a byte too many ([ErrTrailing]),
// because a datagram is one message and extra bytes mean a sender that does
// not speak this protocol. A RELAY's N must equal the number of content bytes
// present.
//
// # Byte order
//
// The protocol page says every field is big-endian, and the shipped client
// disagrees for two of them:
//
//   - the BIND nonce is little-endian ([Options.NonceBigEndian] switches to the
//     page's order for clients that follow it; little-endian is the default);
//   - the PING number is little-endian (the shipped client sends 1 as 01 00).
//     [Ping] always reads and writes it that way: the relay echoes a PING's
//     bytes unchanged and never interprets the number, so a big-endian peer
//     loses nothing.
//
// The RELAY length is big-endian, as the page says and the shipped client
// writes.
//
// # The two BIND layouts
//
// The protocol page sizes ConnectionData by L. The shipped client always
// writes L = 255 and zero-pads its connection data to 255 bytes, so its BIND
// is always [ShippedBindLen] (295) bytes. The padded layout is the exact
// layout with L = 255, so one decoder reads both; the padding stays part of
// [Bind.ConnectionData], since the connection data is an opaque blob and the
// codec cannot tell a trailing zero of data from one of padding: whoever reads
// the blob must tolerate trailing zeros. [Bind.AppendTo] writes the exact
// layout and [Bind.AppendShipped] the padded one. CONNECT_REQUEST follows the
// same pattern ([ConnectRequest.AppendShipped]).
//
// # Signing
//
// The BIND's HMAC is HMAC-SHA256, keyed with the allocation's 64-byte key
// ([KeySize]), over every byte before it: header, accept mode, nonce, L and
// the L bytes of connection data ([SignedRegion]; [ShippedSignedLen] = 263
// bytes in the padded layout). Because the MAC covers bytes, [Verify] works
// on the datagram as received, whatever its layout and nonce order. It
// compares MACs in constant time ([crypto/hmac.Equal]), so how long a relay
// takes to drop a forged BIND reveals nothing of the expected MAC. Keys of
// any length other than 64 bytes are refused ([ErrKeySize]), as the shipped
// client refuses them; [BindMAC] is the bare HMAC, for any key.
//
// # Memory
//
// Decoders parse into a caller-owned struct that can be reused from one
// datagram to the next; their byte-slice fields alias the input, so the input
// must not be modified while the struct is in use. On error the struct is
// left unchanged. Encoders append to a caller-owned slice and allocate nothing
// when it has room. [PeekHeader] and every decoder allocate nothing, on
// success or on error, except for the few errors whose offset depends on a
// length byte (the BIND HMAC and the end of a BIND or CONNECT_REQUEST): a
// flood of malformed datagrams costs no garbage on the RELAY and PING paths.
// [Verify] and [Bind.Sign] allocate the HMAC state; a client binds at most
// once a second, so BIND is not a hot path.
//
// The codec bounds a RELAY's content only by its 16-bit length; how much
// content a relay forwards is its policy ([DefaultMaxRelayContent] unless
// configured otherwise), checked by the caller on the decoded [Relay.Content].
package relay
