package minecraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// The benchmarks run each decoder beside a baseline in the same run: the
// decoder most Go code reaches for first (bytes.Reader, binary.ReadUvarint,
// io.ReadFull into a new slice), with the same checks. Report the ratio of
// the two ns/op.

var errNaive = errors.New("baseline: malformed")

// naiveStatus reads a status answer's frame (length, packet ID, JSON
// length) and copies out its JSON.
func naiveStatus(b []byte) ([]byte, error) {
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(r.Len()) {
		return nil, errNaive
	}
	if id, err := binary.ReadUvarint(r); err != nil || id != uint64(IDStatus) {
		return nil, errNaive
	}
	jn, err := binary.ReadUvarint(r)
	if err != nil || jn != uint64(r.Len()) {
		return nil, errNaive
	}
	json := make([]byte, jn)
	if _, err := io.ReadFull(r, json); err != nil || !utf8.Valid(json) {
		return nil, errNaive
	}
	return json, nil
}

func BenchmarkSplitStatus(b *testing.B) {
	v := vectors(b)["status-component"].Bytes
	decode := func() error {
		f, _, err := SplitFrame(v, 0)
		if err != nil {
			return err
		}
		_, err = DecodeStatusResponse(f.Data)
		return err
	}
	if want, err := naiveStatus(v); err != nil || decode() != nil || len(want) == 0 {
		b.Fatalf("the baseline does not decode what the decoder does: %v", err)
	}
	benchPair(b, v, decode, func() error { _, err := naiveStatus(v); return err })
}

func BenchmarkLegacyDecode(b *testing.B) {
	v := vectors(b)["legacy-answer"].Bytes
	var s LegacyStatus
	// The baseline: the UTF-16BE payload decoded to a string and split on
	// its NULs, the way the legacy answer is usually read.
	naive := func() error {
		if len(v) < 3 || v[0] != 0xFF {
			return errNaive
		}
		r := bytes.NewReader(v[3:])
		u := make([]uint16, r.Len()/2)
		if err := binary.Read(r, binary.BigEndian, u); err != nil {
			return err
		}
		if f := bytes.Split([]byte(string(utf16Decode(u))), []byte{0}); len(f) != 6 {
			return errNaive
		}
		return nil
	}
	if s.Decode(v) != nil || naive() != nil {
		b.Fatal("the baseline does not decode what the decoder does")
	}
	benchPair(b, v, func() error { return s.Decode(v) }, naive)
}

func utf16Decode(u []uint16) []rune {
	out := make([]rune, 0, len(u))
	for _, c := range u {
		out = append(out, rune(c))
	}
	return out
}

// benchPair runs decode as "wire" and the baseline as "baseline".
func benchPair(b *testing.B, msg []byte, decode, baseline func() error) {
	for _, c := range []struct {
		name string
		run  func() error
	}{{"wire", decode}, {"baseline", baseline}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
