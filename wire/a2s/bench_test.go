package a2s

import (
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func BenchmarkDecodeInfo(b *testing.B) {
	var m Info
	testutil.BenchDecode(b, testutil.Vectors(b)["info-source-edf"].Bytes, m.Decode)
}

func BenchmarkDecodePlayers(b *testing.B) {
	var m Players
	testutil.BenchDecode(b, testutil.Vectors(b)["players"].Bytes, m.Decode)
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
