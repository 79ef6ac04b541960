package cserver

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// start builds the server and runs it in mode with one thread (so that its
// answers keep the requests' order), or skips where there is no compiler.
func start(t *testing.T, mode string) *net.UDPConn {
	t.Helper()
	bin, err := Build(t.TempDir())
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(bin, mode, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raddr, err := net.ResolveUDPAddr("udp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer sends req, then a valid request whose answer marks the end, and
// returns what came before the mark (nil: no answer).
func answer(t *testing.T, c *net.UDPConn, req []byte) []byte {
	t.Helper()
	mark := []byte{0x59, 0x00, 0x01, 'm', 'a', 'r', 'k'}
	wantMark := []byte{0x95, 0x00, 'm', 'a', 'r', 'k'}
	for _, b := range [][]byte{req, mark} {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("request % x: %v", req, err)
		}
		if bytes.Equal(buf[:n], wantMark) && got == nil {
			return nil
		}
		if bytes.Equal(buf[:n], wantMark) {
			return got
		}
		if got != nil {
			t.Fatalf("request % x: two answers", req)
		}
		got = append([]byte{}, buf[:n]...)
	}
}

// The C server answers a QoS request with the bytes gamegate's QoS echo
// answers a source it lets through with (wire/qos's decoder, a response
// with no flow control), and drops what that decoder refuses: spec-shaped
// requests, every malformed kind, and mutations of them.
func TestQoSAnswersAsGamegate(t *testing.T) {
	c := start(t, QoS)
	valid, _ := (&wireqos.Request{Title: []byte("QoS request"), Custom: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}).AppendTo(nil)
	unicode, _ := (&wireqos.Request{Title: []byte("Jeu de tir – édition ☃"), Custom: []byte("x")}).AppendTo(nil)
	longTitle, _ := (&wireqos.Request{Title: bytes.Repeat([]byte("t"), wireqos.MaxTitle), Custom: []byte("c")}).AppendTo(nil)
	reqs := [][]byte{
		valid, unicode, longTitle,
		{0x59, 0x00, 0x01},                         // empty title, no custom data
		{0x59, 0x00, 0x00, 'x'},                    // title length 0
		{0x59, 0x00, 0x05, 'a', 'b'},               // title cut short
		{0x59, 0x10, 0x01, 'x'},                    // version 1
		{0x59, 0x01, 0x01, 'x'},                    // flow control in a request
		{0x95, 0x00, 0x01, 'x'},                    // a response
		{0x59, 0x00},                               // too short
		{0x59, 0x00, 0x03, 0xC0, 0x80, 'x'},        // an overlong encoding
		{0x59, 0x00, 0x04, 0xED, 0xA0, 0x80},       // a surrogate
		{0x59, 0x00, 0x05, 0xF4, 0x90, 0x80, 0x80}, // above U+10FFFF
		append([]byte{0x59, 0x00, 0x01}, make([]byte, wireqos.MaxPacket-3)...), // 1500 bytes
		append([]byte{0x59, 0x00, 0x01}, make([]byte, wireqos.MaxPacket-2)...), // 1501 bytes
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := append([]byte{}, reqs[rng.IntN(3)]...)
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		reqs = append(reqs, b[:1+rng.IntN(len(b))])
	}
	answered := 0
	for _, req := range reqs {
		var want []byte
		var r wireqos.Request
		if r.Decode(req) == nil {
			want = wireqos.AppendResponse(nil, wireqos.FlowNone, r.Custom)
			answered++
		}
		if got := answer(t, c, req); !bytes.Equal(got, want) {
			t.Fatalf("request % x: answer % x, want % x", req, got, want)
		}
		if len(want) >= len(req) {
			t.Fatalf("request % x: an answer of %d bytes", req, len(want))
		}
	}
	if answered < 10 {
		t.Fatalf("only %d requests were valid: the test checks little", answered)
	}
}

// In echo mode every datagram comes back as it was sent.
func TestEchoSendsBack(t *testing.T) {
	c := start(t, Echo)
	for _, req := range [][]byte{{0xFF, 0xFF, 0xFF, 0xFF, 'T'}, make([]byte, 1400)} {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2048)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], req) {
			t.Fatalf("echo of % x: % x", req, buf[:n])
		}
	}
}

// Where no C compiler is installed, BuildTemp says so in a note, without
// an error: the workloads go on without the C server.
func TestNoCompilerIsANote(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	bin, note, cleanup, err := BuildTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if bin != "" || note != ErrNoCompiler.Error() {
		t.Fatalf("BuildTemp without cc: program %q, note %q", bin, note)
	}
}
