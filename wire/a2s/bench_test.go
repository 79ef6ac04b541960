package a2s

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// The benchmarks run each decoder beside a baseline in the same run: the
// decoder most Go code reaches for first (bytes.Buffer, binary.Read,
// ReadString), decoding the same message into the same fields. Report the
// ratio of the two ns/op (testutil.BenchDecodeBeside).

// naiveInfo is the baseline A2S_INFO decoder.
type naiveInfo struct {
	Header                                                   int32
	Type, Protocol                                           byte
	Name, Map, Folder, Game                                  string
	AppID                                                    uint16
	Players, MaxPlayers, Bots, ServerType, Env, Visible, VAC byte
	Version                                                  string
	EDF                                                      byte
	Port                                                     uint16
	SteamID, GameID                                          uint64
	TVPort                                                   uint16
	TVName, Keywords                                         string
}

var errNaive = errors.New("baseline: malformed")

func naiveString(r *bytes.Buffer, s *string) error {
	v, err := r.ReadString(0)
	if err != nil {
		return errNaive
	}
	*s = v[:len(v)-1]
	return nil
}

func (m *naiveInfo) decode(b []byte) error {
	r := bytes.NewBuffer(b)
	le := binary.LittleEndian
	if binary.Read(r, le, &m.Header) != nil || binary.Read(r, le, &m.Type) != nil || binary.Read(r, le, &m.Protocol) != nil {
		return errNaive
	}
	for _, s := range []*string{&m.Name, &m.Map, &m.Folder, &m.Game} {
		if err := naiveString(r, s); err != nil {
			return err
		}
	}
	if binary.Read(r, le, &m.AppID) != nil {
		return errNaive
	}
	for _, v := range []*byte{&m.Players, &m.MaxPlayers, &m.Bots, &m.ServerType, &m.Env, &m.Visible, &m.VAC} {
		if binary.Read(r, le, v) != nil {
			return errNaive
		}
	}
	if err := naiveString(r, &m.Version); err != nil {
		return err
	}
	if binary.Read(r, le, &m.EDF) != nil {
		return nil // no extra data
	}
	if m.EDF&EDFPort != 0 && binary.Read(r, le, &m.Port) != nil ||
		m.EDF&EDFSteamID != 0 && binary.Read(r, le, &m.SteamID) != nil {
		return errNaive
	}
	if m.EDF&EDFSourceTV != 0 && (binary.Read(r, le, &m.TVPort) != nil || naiveString(r, &m.TVName) != nil) {
		return errNaive
	}
	if m.EDF&EDFKeywords != 0 && naiveString(r, &m.Keywords) != nil ||
		m.EDF&EDFGameID != 0 && binary.Read(r, le, &m.GameID) != nil {
		return errNaive
	}
	return nil
}

// naivePlayers is the baseline A2S_PLAYER decoder.
type naivePlayers struct {
	Players []naivePlayer
}

type naivePlayer struct {
	Index    byte
	Name     string
	Score    int32
	Duration float32
}

func (m *naivePlayers) decode(b []byte) error {
	r := bytes.NewBuffer(b)
	le := binary.LittleEndian
	var hdr int32
	var typ, n byte
	if binary.Read(r, le, &hdr) != nil || binary.Read(r, le, &typ) != nil || binary.Read(r, le, &n) != nil {
		return errNaive
	}
	m.Players = m.Players[:0]
	for range n {
		var p naivePlayer
		if binary.Read(r, le, &p.Index) != nil || naiveString(r, &p.Name) != nil ||
			binary.Read(r, le, &p.Score) != nil || binary.Read(r, le, &p.Duration) != nil {
			return errNaive
		}
		m.Players = append(m.Players, p)
	}
	return nil
}

func BenchmarkDecodeInfo(b *testing.B) {
	var m Info
	var base naiveInfo
	testutil.BenchDecodeBeside(b, testutil.Vectors(b)["info-source-edf"].Bytes, m.Decode, base.decode)
	if base.Keywords != string(m.Keywords) || base.Port != m.Port || base.Name != string(m.Name) {
		b.Fatalf("the baseline read %+v", base)
	}
}

func BenchmarkDecodePlayers(b *testing.B) {
	var m Players
	var base naivePlayers
	testutil.BenchDecodeBeside(b, testutil.Vectors(b)["players"].Bytes, m.Decode, base.decode)
	if len(base.Players) != len(m.Players) || base.Players[0].Name != string(m.Players[0].Name) {
		b.Fatalf("the baseline read %+v", base)
	}
}

func BenchmarkDecodeRules(b *testing.B) {
	var m Rules
	testutil.BenchDecode(b, testutil.Vectors(b)["rules-big"].Bytes, m.Decode)
}

func BenchmarkDecodeRequest(b *testing.B) {
	var q Request
	testutil.BenchDecode(b, testutil.Vectors(b)["info-request-challenge"].Bytes, q.Decode)
}

// BenchmarkReassemble joins the three Source fragments of rules-big.
func BenchmarkReassemble(b *testing.B) {
	var frs [][]byte
	for i := 0; i < 3; i++ {
		frs = append(frs, testutil.Vectors(b)["rules-big-source."+string(rune('0'+i))].Bytes)
	}
	benchReassemble(b, frs)
}

// benchReassemble joins the fragments frs, once per iteration.
func benchReassemble(b *testing.B, frs [][]byte) {
	var r Reassembler
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		for _, f := range frs {
			if _, err := r.Add(f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReassembleCompressed adds bzip2 decompression (the cold path).
func BenchmarkReassembleCompressed(b *testing.B) {
	var frs [][]byte
	for _, v := range testutil.ReadVectors(b, "testdata/vectors.txt") {
		if len(v.Name) > 14 && v.Name[:14] == "rules-big-bz2." {
			frs = append(frs, v.Bytes)
		}
	}
	benchReassemble(b, frs)
}
