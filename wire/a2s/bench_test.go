package a2s

import (
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func benchVector(b *testing.B, name string) []byte {
	for _, v := range testutil.ReadVectors(b, "testdata/vectors.txt") {
		if v.Name == name {
			return v.Bytes
		}
	}
	b.Fatalf("no vector %q", name)
	return nil
}

func BenchmarkDecodeInfo(b *testing.B) {
	msg := benchVector(b, "info-source-edf")
	var m Info
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := m.Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePlayers(b *testing.B) {
	msg := benchVector(b, "players")
	var m Players
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := m.Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRules(b *testing.B) {
	msg := benchVector(b, "rules-big")
	var m Rules
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := m.Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	msg := benchVector(b, "info-request-challenge")
	var q Request
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := q.Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReassemble joins the three Source fragments of rules-big.
func BenchmarkReassemble(b *testing.B) {
	var frs [][]byte
	for i := 0; i < 3; i++ {
		frs = append(frs, benchVector(b, "rules-big-source."+string(rune('0'+i))))
	}
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
