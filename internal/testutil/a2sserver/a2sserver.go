// Package a2sserver is a canned A2S game server for tests, apart from
// testutil because wire/a2s's own tests use testutil.
package a2sserver

import (
	"bytes"
	"hash/crc32"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"

	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Server is a canned A2S game server on loopback, built from wire/a2s's
// encoders: it answers A2S_INFO, A2S_PLAYER and A2S_RULES with the challenge
// flow, splitting answers longer than MaxSingle and compressing the rules
// answer when given its bzip2 form. It counts every datagram it receives.
type Server struct {
	Addr string

	conn      *net.UDPConn
	mu        sync.Mutex
	cfg       Config
	challenge int32
	received  atomic.Int64
	byType    [256]atomic.Int64
	nextID    uint32
	wg        sync.WaitGroup
}

// Config is what a canned server answers.
type Config struct {
	Info    wirea2s.Info
	Players wirea2s.Players
	Rules   wirea2s.Rules
	// RulesMessage, if set, is the rules answer as sent (instead of
	// encoding Rules); RulesCompressed, if set, is its bzip2 form, and the
	// answer is then sent compressed.
	RulesMessage    []byte
	RulesCompressed []byte
	// InfoChallenge makes A2S_INFO need a challenge too.
	InfoChallenge bool
	// Layout and MaxPayload of split answers. Default: LayoutSource, 1248.
	Layout     wirea2s.Layout
	MaxPayload int
}

// Start starts a canned A2S server; it stops with the test.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen starts a canned A2S server outside a test (a benchmark's
// upstream); Close stops it.
func Listen(cfg Config) (*Server, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: conn.LocalAddr().String(), conn: conn, cfg: cfg, challenge: 0x2A5B3C4D}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() {
	s.conn.Close()
	s.wg.Wait()
}

// Received is how many datagrams the server has received.
func (s *Server) Received() int64 { return s.received.Load() }

// ReceivedOf is how many requests of type typ (with a valid challenge or
// not) the server has received.
func (s *Server) ReceivedOf(typ wirea2s.Type) int64 { return s.byType[typ].Load() }

// SetInfo changes the info answer.
func (s *Server) SetInfo(m wirea2s.Info) {
	s.mu.Lock()
	s.cfg.Info = m
	s.mu.Unlock()
}

func (s *Server) serve() {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, addr, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		s.received.Add(1)
		var q wirea2s.Request
		if q.Decode(buf[:n]) != nil {
			continue
		}
		s.byType[q.Type].Add(1)
		for _, d := range s.answer(&q) {
			_, _ = s.conn.WriteToUDP(d, addr)
		}
	}
}

func (s *Server) answer(q *wirea2s.Request) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	needs := q.Type != wirea2s.TypeInfoRequest || s.cfg.InfoChallenge
	if needs && (!q.HasChallenge || q.Challenge != s.challenge) {
		return [][]byte{wirea2s.AppendChallenge(nil, s.challenge)}
	}
	var msg []byte
	var err error
	compressed := false
	switch q.Type {
	case wirea2s.TypeInfoRequest:
		msg, err = s.cfg.Info.AppendTo(nil)
	case wirea2s.TypePlayerRequest:
		msg, err = s.cfg.Players.AppendTo(nil)
	case wirea2s.TypeRulesRequest:
		msg, compressed = s.cfg.RulesMessage, s.cfg.RulesCompressed != nil
		if msg == nil {
			msg, err = s.cfg.Rules.AppendTo(nil)
		}
	}
	if err != nil {
		panic(err)
	}
	if len(msg) <= 1400 && !compressed {
		return [][]byte{msg}
	}
	layout := s.cfg.Layout
	if layout == wirea2s.LayoutAuto {
		layout = wirea2s.LayoutSource
	}
	s.nextID++
	id, payload, size, crc := s.nextID, msg, uint32(0), uint32(0)
	if compressed {
		id |= wirea2s.CompressedFlag
		payload, size, crc = s.cfg.RulesCompressed, uint32(len(msg)), crc32.ChecksumIEEE(msg)
	}
	frs, err := wirea2s.Splitter{Layout: layout, MaxPayload: s.cfg.MaxPayload}.Split(nil, id, payload, size, crc)
	if err != nil {
		panic(err)
	}
	return frs
}

// BigRules returns the 90-rule A2S_RULES answer of wire/a2s's test
// vectors and its bzip2 form (made by the bzip2 command; the standard
// library has no bzip2 encoder).
func BigRules(t testing.TB) (msg, compressed []byte) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "wire", "a2s", "testdata", "vectors.txt")
	var r wirea2s.Reassembler
	for _, v := range testutil.ReadVectors(t, path) {
		if v.Name == "rules-big" {
			msg = v.Bytes
		}
		if strings.HasPrefix(v.Name, "rules-big-bz2.") {
			if _, err := r.Add(v.Bytes); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, _, _, ok := r.Compressed()
	if !ok || msg == nil || !bytes.Equal(r.Message(), msg) {
		t.Fatal("wire/a2s vectors: rules-big and its compressed fragments not found")
	}
	return msg, bytes.Clone(data)
}
