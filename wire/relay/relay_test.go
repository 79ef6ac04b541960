package relay

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// The allocation IDs of testdata/vectors.txt.
var (
	idA = AllocationID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	idB = AllocationID{0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}
)

// newMessage returns an empty message of type t, or nil for an unknown type.
func newMessage(t Type) Message {
	switch t {
	case TypeBind:
		return new(Bind)
	case TypeBindReceived:
		return new(BindReceived)
	case TypePing:
		return new(Ping)
	case TypeConnectRequest:
		return new(ConnectRequest)
	case TypeAccepted:
		return new(Accepted)
	case TypeRejected:
		return new(Rejected)
	case TypeDisconnect:
		return new(Disconnect)
	case TypeRelay:
		return new(Relay)
	case TypeClose:
		return new(Close)
	case TypeError:
		return new(Error)
	}
	return nil
}

var allTypes = []Type{
	TypeBind, TypeBindReceived, TypePing, TypeConnectRequest, TypeAccepted,
	TypeRejected, TypeDisconnect, TypeRelay, TypeClose, TypeError,
}

// kindType maps a vector kind to its message type.
func kindType(t *testing.T, kind string) Type {
	t.Helper()
	for _, typ := range allTypes {
		if strings.ToLower(typ.String()) == kind {
			return typ
		}
	}
	t.Fatalf("unknown vector kind %q", kind)
	return 0
}

var badKinds = map[string]error{
	"bad-truncated": wire.ErrTruncated,
	"bad-trailing":  ErrTrailing,
	"bad-magic":     wire.ErrMagic,
	"bad-version":   ErrVersion,
	"bad-type":      ErrType,
}

// goodVectors returns the vectors that must decode, by name.
func goodVectors(t *testing.T) map[string]testutil.Vector {
	m := make(map[string]testutil.Vector)
	for name, v := range testutil.Vectors(t) {
		if !strings.HasPrefix(v.Kind, "bad-") {
			m[name] = v
		}
	}
	return m
}

func TestVectors(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		t.Run(name, func(t *testing.T) {
			if want, bad := badKinds[v.Kind]; bad {
				checkBad(t, v.Bytes, want)
				return
			}
			want := kindType(t, v.Kind)
			typ, err := PeekHeader(v.Bytes)
			if err != nil || typ != want {
				t.Fatalf("PeekHeader: got %v (%v), want %v", typ, err, want)
			}
			m := newMessage(typ)
			if err := m.Decode(v.Bytes); err != nil {
				t.Fatalf("Decode: got %v, want nil", err)
			}
			if got := m.Type(); got != want {
				t.Fatalf("Type: got %v, want %v", got, want)
			}
			if got, want := m.Len(), len(v.Bytes); got != want {
				t.Fatalf("Len: got %d, want %d", got, want)
			}
			out, err := m.AppendTo(nil)
			if err != nil || !bytes.Equal(out, v.Bytes) {
				t.Fatalf("AppendTo: got %x (%v), want %x", out, err, v.Bytes)
			}
			// No decoder of another type accepts it.
			for _, other := range allTypes {
				if other == want {
					continue
				}
				if err := newMessage(other).Decode(v.Bytes); !errors.Is(err, ErrType) {
					t.Fatalf("%v.Decode: got %v, want %v", other, err, ErrType)
				}
			}
		})
	}
}

// checkBad checks that in is refused with want, by PeekHeader or by the
// decoder of its header's type, and by every decoder.
func checkBad(t *testing.T, in []byte, want error) {
	t.Helper()
	typ, err := PeekHeader(in)
	if err == nil {
		err = newMessage(typ).Decode(in)
	}
	var de *wire.DecodeError
	if !errors.Is(err, want) || !errors.As(err, &de) {
		t.Fatalf("got %v, want a *wire.DecodeError wrapping %v", err, want)
	}
	for _, typ := range allTypes {
		if err := newMessage(typ).Decode(in); err == nil {
			t.Fatalf("%v.Decode: got nil error, want one", typ)
		}
	}
}

func TestDecodedFields(t *testing.T) {
	vs := testutil.Vectors(t)
	decode := func(t *testing.T, name string, m Message) []byte {
		t.Helper()
		in := vs[name].Bytes
		if err := m.Decode(in); err != nil {
			t.Fatalf("Decode %s: got %v, want nil", name, err)
		}
		return in
	}
	t.Run("ping number is little-endian", func(t *testing.T) {
		var m Ping
		decode(t, "ping-1", &m)
		if m.Number != 1 || m.AllocationID != idA {
			t.Fatalf("got %+v, want number 1 from %v", m, idA)
		}
		decode(t, "ping-beef", &m)
		if got, want := m.Number, uint16(0xbeef); got != want {
			t.Fatalf("number: got %#x, want %#x", got, want)
		}
	})
	t.Run("relay content aliases the input", func(t *testing.T) {
		var m Relay
		in := decode(t, "relay-hi", &m)
		if m.From != idA || m.To != idB || string(m.Content) != "hi" {
			t.Fatalf("got %v → %v %q, want %v → %v \"hi\"", m.From, m.To, m.Content, idA, idB)
		}
		if &m.Content[0] != &in[38] || cap(m.Content) != 2 {
			t.Fatalf("content: got a copy or a slice of capacity %d, want an alias of the input with capacity 2", cap(m.Content))
		}
		decode(t, "relay-empty", &m)
		if len(m.Content) != 0 {
			t.Fatalf("content: got %x, want none", m.Content)
		}
	})
	t.Run("accepted from the host to the requester", func(t *testing.T) {
		var m Accepted
		decode(t, "accepted", &m)
		if m.From != idB || m.To != idA {
			t.Fatalf("got %v → %v, want %v → %v", m.From, m.To, idB, idA)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		var m Rejected
		decode(t, "rejected", &m)
		if m.From != idB || m.To != idA {
			t.Fatalf("got %v → %v, want %v → %v", m.From, m.To, idB, idA)
		}
	})
	t.Run("disconnect", func(t *testing.T) {
		var m Disconnect
		decode(t, "disconnect", &m)
		if m.From != idA || m.To != idB {
			t.Fatalf("got %v → %v, want %v → %v", m.From, m.To, idA, idB)
		}
	})
	t.Run("connect request", func(t *testing.T) {
		var m ConnectRequest
		in := decode(t, "connect-request", &m)
		if m.AllocationID != idA || !bytes.Equal(m.ToConnectionData, []byte{0xc1, 0xc2, 0xc3}) {
			t.Fatalf("got %v %x, want %v c1c2c3", m.AllocationID, m.ToConnectionData, idA)
		}
		if &m.ToConnectionData[0] != &in[21] {
			t.Fatal("to connection data: got a copy, want an alias of the input")
		}
	})
	t.Run("close", func(t *testing.T) {
		var m Close
		decode(t, "close", &m)
		if m.AllocationID != idA {
			t.Fatalf("got %v, want %v", m.AllocationID, idA)
		}
	})
	t.Run("error", func(t *testing.T) {
		var m Error
		decode(t, "error-not-connected", &m)
		if m.AllocationID != idA || m.Code != CodeNotConnected {
			t.Fatalf("got %v %v, want %v %v", m.AllocationID, m.Code, idA, CodeNotConnected)
		}
		decode(t, "error-code-7", &m)
		if got, want := m.Code.String(), "ErrorCode(7)"; got != want {
			t.Fatalf("code: got %q, want %q", got, want)
		}
	})
	t.Run("bind exact layout", func(t *testing.T) {
		var m Bind
		in := decode(t, "bind-exact", &m)
		if m.AcceptMode != AcceptModeAuto || m.Nonce != 1 || !bytes.Equal(m.ConnectionData, []byte{0xc1, 0xc2, 0xc3}) {
			t.Fatalf("got mode %d nonce %d data %x, want mode 0 nonce 1 data c1c2c3", m.AcceptMode, m.Nonce, m.ConnectionData)
		}
		if !bytes.Equal(m.HMAC[:], in[11:]) {
			t.Fatalf("hmac: got %x, want %x", m.HMAC, in[11:])
		}
	})
	t.Run("bind shipped layout keeps its padding", func(t *testing.T) {
		var m Bind
		in := decode(t, "bind-shipped", &m)
		if len(in) != ShippedBindLen || len(m.ConnectionData) != MaxConnectionData || m.Nonce != 1 {
			t.Fatalf("got %d bytes, %d bytes of data, nonce %d; want %d, %d, 1", len(in), len(m.ConnectionData), m.Nonce, ShippedBindLen, MaxConnectionData)
		}
	})
}

func TestAllocationIDString(t *testing.T) {
	tests := []struct {
		name string
		id   AllocationID
		want string
	}{
		{"A", idA, "00112233-4455-6677-8899-aabbccddeeff"},
		{"B", idB, "11111111-2222-3333-4444-555555555555"},
		{"zero", AllocationID{}, "00000000-0000-0000-0000-000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.String(); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	types := map[Type]string{
		TypeBind: "BIND", TypeBindReceived: "BIND_RECEIVED", TypePing: "PING",
		TypeConnectRequest: "CONNECT_REQUEST", TypeAccepted: "ACCEPTED",
		TypeRejected: "REJECTED", TypeDisconnect: "DISCONNECT", TypeRelay: "RELAY",
		TypeClose: "CLOSE", TypeError: "ERROR", 4: "Type(4)", 5: "Type(5)",
		7: "Type(7)", 13: "Type(13)", 255: "Type(255)",
	}
	for typ, want := range types {
		t.Run(want, func(t *testing.T) {
			if got := typ.String(); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if got, want := typ.Known(), !strings.HasPrefix(want, "Type("); got != want {
				t.Fatalf("Known: got %v, want %v", got, want)
			}
		})
	}
	codes := []string{"InvalidProtocolVersion", "Timeout", "Unauthorized",
		"ClientPlayerMismatch", "AllocationNotFound", "NotConnected", "SelfConnectNotAllowed"}
	for i, want := range codes {
		t.Run(want, func(t *testing.T) {
			if got := ErrorCode(i).String(); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	if got, want := TypeRejected, Type(8); got != want {
		t.Fatalf("REJECTED: got %d, want %d", got, want)
	}
}

func TestPeekHeader(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    Type
		wantErr error
	}{
		{"relay", []byte{0xda, 0x72, 0x00, 0x0a}, TypeRelay, nil},
		{"header only is enough", []byte{0xda, 0x72, 0x00, 0x00}, TypeBind, nil},
		{"version 1 still gives the type", []byte{0xda, 0x72, 0x01, 0x02, 0xff}, TypePing, ErrVersion},
		{"reserved type 5", []byte{0xda, 0x72, 0x00, 0x05}, 5, ErrType},
		{"type 200", []byte{0xda, 0x72, 0x00, 200}, 200, ErrType},
		{"signature", []byte{0xda, 0x00, 0x00, 0x02}, 0, wire.ErrMagic},
		{"three bytes", []byte{0xda, 0x72, 0x00}, 0, wire.ErrTruncated},
		{"empty", nil, 0, wire.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PeekHeader(tt.in)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got %v (%v), want %v (%v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	vs := testutil.Vectors(t)
	bind := vs["bind-exact"].Bytes
	relay := vs["relay-hi"].Bytes
	with := func(b []byte, more ...byte) []byte { return append(bytes.Clone(b), more...) }
	tests := []struct {
		name   string
		m      Message
		in     []byte
		want   error
		field  string
		offset int
	}{
		{"ping decoder given a relay", new(Ping), relay, ErrType, "type", 3},
		{"relay decoder given version 1", new(Relay), append([]byte{0xda, 0x72, 0x01}, relay[3:]...), ErrVersion, "version", 2},
		{"relay decoder given a bad signature", new(Relay), append([]byte{0xdb}, relay[1:]...), wire.ErrMagic, "signature", 0},
		{"relay without to", new(Relay), relay[:30], wire.ErrTruncated, "to", 20},
		{"relay without length", new(Relay), relay[:37], wire.ErrTruncated, "length", 36},
		{"relay declares more than present", new(Relay), relay[:39], wire.ErrTruncated, "content", 38},
		{"relay declares less than present", new(Relay), with(relay, '!'), ErrTrailing, "content", 38},
		{"ping without number", new(Ping), vs["ping-1"].Bytes[:21], wire.ErrTruncated, "number", 20},
		{"ping trailing", new(Ping), with(vs["ping-1"].Bytes, 0), ErrTrailing, "PING", 22},
		{"bind without accept mode", new(Bind), bind[:4], wire.ErrTruncated, "accept mode", 4},
		{"bind without nonce", new(Bind), bind[:6], wire.ErrTruncated, "nonce", 5},
		{"bind without data length", new(Bind), bind[:7], wire.ErrTruncated, "connection data length", 7},
		{"bind data length past the end", new(Bind), vs["bad-bind-data-past-end"].Bytes, wire.ErrTruncated, "connection data", 8},
		{"bind data length 255 with a 3-byte datagram tail", new(Bind), with(bind[:7], 0xff, 1, 2, 3), wire.ErrTruncated, "connection data", 8},
		{"bind hmac short", new(Bind), bind[:len(bind)-1], wire.ErrTruncated, "hmac", 11},
		{"bind trailing", new(Bind), with(bind, 0), ErrTrailing, "BIND", 43},
		{"connect request without length", new(ConnectRequest), vs["connect-request"].Bytes[:20], wire.ErrTruncated, "to connection data length", 20},
		{"connect request data past the end", new(ConnectRequest), vs["bad-connect-request-past-end"].Bytes, wire.ErrTruncated, "to connection data", 21},
		{"connect request trailing", new(ConnectRequest), vs["bad-connect-request-trailing"].Bytes, ErrTrailing, "CONNECT_REQUEST", 24},
		{"accepted without from", new(Accepted), vs["accepted"].Bytes[:19], wire.ErrTruncated, "from", 4},
		{"rejected trailing", new(Rejected), with(vs["rejected"].Bytes, 0), ErrTrailing, "REJECTED", 36},
		{"close short", new(Close), vs["close"].Bytes[:19], wire.ErrTruncated, "allocation id", 4},
		{"error without code", new(Error), vs["bad-error-short"].Bytes, wire.ErrTruncated, "error code", 20},
		{"bind received trailing", new(BindReceived), with(vs["bind-received"].Bytes, 0), ErrTrailing, "BIND_RECEIVED", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Decode(tt.in)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.offset {
				t.Fatalf("got %v, want %v on field %q at offset %d", err, tt.want, tt.field, tt.offset)
			}
		})
	}
}

func TestRelayLengthErrorsSayWhy(t *testing.T) {
	vs := testutil.Vectors(t)
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"too few", vs["bad-relay-length-long"].Bytes, "content at offset 38: truncated: fewer content bytes than the length declares"},
		{"too many", vs["bad-relay-length-short"].Bytes, "content at offset 38: trailing bytes: more content bytes than the length declares"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Relay
			if err := m.Decode(tt.in); err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// Every proper prefix of every valid message is refused as truncated, and
// leaves the struct as it was.
func TestTruncation(t *testing.T) {
	for name, v := range goodVectors(t) {
		t.Run(name, func(t *testing.T) {
			typ := kindType(t, v.Kind)
			m := newMessage(typ)
			if err := m.Decode(v.Bytes); err != nil {
				t.Fatal(err)
			}
			before := reflect.ValueOf(m).Elem().Interface()
			for n := range len(v.Bytes) {
				err := m.Decode(v.Bytes[:n])
				var de *wire.DecodeError
				if !errors.Is(err, wire.ErrTruncated) || !errors.As(err, &de) {
					t.Fatalf("prefix of %d bytes: got %v, want a *wire.DecodeError wrapping %v", n, err, wire.ErrTruncated)
				}
				if after := reflect.ValueOf(m).Elem().Interface(); !reflect.DeepEqual(after, before) {
					t.Fatalf("prefix of %d bytes: got the message changed to %+v, want %+v", n, after, before)
				}
			}
		})
	}
}

// A byte after any valid message is refused.
func TestTrailing(t *testing.T) {
	for name, v := range goodVectors(t) {
		t.Run(name, func(t *testing.T) {
			m := newMessage(kindType(t, v.Kind))
			for _, extra := range [][]byte{{0}, {0xda, 0x72, 0x00, 0x01}} {
				in := append(bytes.Clone(v.Bytes), extra...)
				err := m.Decode(in)
				var de *wire.DecodeError
				if !errors.Is(err, ErrTrailing) || !errors.As(err, &de) {
					t.Fatalf("%d extra bytes: got %v, want a *wire.DecodeError wrapping %v", len(extra), err, ErrTrailing)
				}
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	content := bytes.Repeat([]byte("game state "), 128)[:DefaultMaxRelayContent]
	data := bytes.Repeat([]byte{0x5a}, MaxConnectionData)
	tests := []struct {
		name string
		m    Message
	}{
		{"bind", &Bind{AcceptMode: AcceptModeAuto, Nonce: 0x1234, ConnectionData: []byte("conn"), HMAC: [HMACSize]byte{1, 2, 3, 31: 0xff}}},
		{"bind accept mode 1 and 255 bytes", &Bind{AcceptMode: 1, Nonce: 0xffff, ConnectionData: data}},
		{"bind received", &BindReceived{}},
		{"ping", &Ping{AllocationID: idA, Number: 0xfffe}},
		{"connect request", &ConnectRequest{AllocationID: idB, ToConnectionData: data}},
		{"accepted", &Accepted{From: idB, To: idA}},
		{"rejected", &Rejected{From: idA, To: idB}},
		{"disconnect", &Disconnect{From: idA, To: idB}},
		{"relay 1400 bytes", &Relay{From: idA, To: idB, Content: content}},
		{"relay 65535 bytes", &Relay{From: idA, To: idB, Content: make([]byte, 65535)}},
		{"close", &Close{AllocationID: idB}},
		{"error", &Error{AllocationID: idA, Code: CodeSelfConnectNotAllowed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("prefix")
			out, err := tt.m.AppendTo(bytes.Clone(prefix))
			if err != nil {
				t.Fatalf("AppendTo: got %v, want nil", err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("AppendTo: got %q, want it to keep %q", out[:len(prefix)], prefix)
			}
			enc := out[len(prefix):]
			if got, want := len(enc), tt.m.Len(); got != want {
				t.Fatalf("length: got %d, want Len() = %d", got, want)
			}
			if typ, err := PeekHeader(enc); err != nil || typ != tt.m.Type() {
				t.Fatalf("PeekHeader: got %v (%v), want %v", typ, err, tt.m.Type())
			}
			back := newMessage(tt.m.Type())
			if err := back.Decode(enc); err != nil {
				t.Fatalf("Decode: got %v, want nil", err)
			}
			if !reflect.DeepEqual(back, tt.m) {
				t.Fatalf("round trip: got %+v, want %+v", back, tt.m)
			}
		})
	}
}

func TestEncoderRefusals(t *testing.T) {
	long := make([]byte, MaxConnectionData+1)
	tests := []struct {
		name   string
		encode func(b []byte) ([]byte, error)
	}{
		{"bind data 256 bytes", (&Bind{ConnectionData: long}).AppendTo},
		{"bind shipped data 256 bytes", (&Bind{ConnectionData: long}).AppendShipped},
		{"connect request data 256 bytes", (&ConnectRequest{ToConnectionData: long}).AppendTo},
		{"connect request shipped data 256 bytes", (&ConnectRequest{ToConnectionData: long}).AppendShipped},
		{"relay content 65536 bytes", (&Relay{Content: make([]byte, 1<<16)}).AppendTo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte("kept")
			out, err := tt.encode(in)
			if !errors.Is(err, wire.ErrTooLong) || !bytes.Equal(out, in) {
				t.Fatalf("got %q (%v), want %q and an error wrapping %v", out, err, in, wire.ErrTooLong)
			}
		})
	}
}

func TestZeroAllocs(t *testing.T) {
	vs := testutil.Vectors(t)
	relayIn := vs["relay-hi"].Bytes
	pingIn := vs["ping-1"].Bytes
	badRelays := [][]byte{vs["bad-relay-length-long"].Bytes, vs["bad-relay-length-short"].Bytes, relayIn[:20], vs["bad-signature"].Bytes}
	badPings := [][]byte{vs["bad-ping-short"].Bytes, vs["bad-ping-trailing"].Bytes, vs["bad-version-1"].Bytes, relayIn}
	data := make([]byte, 100)
	msgs := []Message{
		&Bind{ConnectionData: data},
		&BindReceived{},
		&Ping{AllocationID: idA, Number: 1},
		&ConnectRequest{AllocationID: idA, ToConnectionData: data},
		&Accepted{From: idA, To: idB},
		&Rejected{From: idA, To: idB},
		&Disconnect{From: idA, To: idB},
		&Relay{From: idA, To: idB, Content: make([]byte, DefaultMaxRelayContent)},
		&Close{AllocationID: idA},
		&Error{AllocationID: idA, Code: CodeTimeout},
	}
	peekIns := append(badRelays[:len(badRelays):len(badRelays)], relayIn)
	bind := &Bind{ConnectionData: data}
	creq := &ConnectRequest{ToConnectionData: data}
	buf := make([]byte, 0, 2048)
	tests := []struct {
		name string
		run  func()
	}{
		{"PeekHeader", func() {
			for _, in := range peekIns {
				_, _ = PeekHeader(in)
			}
		}},
		{"Relay.Decode", func() {
			var m Relay
			if err := m.Decode(relayIn); err != nil {
				panic(err)
			}
		}},
		{"Relay.Decode errors", func() {
			var m Relay
			for _, in := range badRelays {
				if m.Decode(in) == nil {
					panic("decoded a bad relay")
				}
			}
		}},
		{"Ping.Decode", func() {
			var m Ping
			if err := m.Decode(pingIn); err != nil {
				panic(err)
			}
		}},
		{"Ping.Decode errors", func() {
			var m Ping
			for _, in := range badPings {
				if m.Decode(in) == nil {
					panic("decoded a bad ping")
				}
			}
		}},
		{"AppendTo", func() {
			for _, m := range msgs {
				if _, err := m.AppendTo(buf[:0]); err != nil {
					panic(err)
				}
			}
		}},
		{"AppendShipped", func() {
			if _, err := bind.AppendShipped(buf[:0]); err != nil {
				panic(err)
			}
			if _, err := creq.AppendShipped(buf[:0]); err != nil {
				panic(err)
			}
			if _, err := bind.AppendWith(buf[:0], Options{NonceBigEndian: true, Padded: true}); err != nil {
				panic(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tt.run); allocs != 0 {
				t.Fatalf("got %v allocations per run, want 0", allocs)
			}
		})
	}
}
