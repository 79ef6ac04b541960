package minecraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/gamegate/gamegate/internal/testutil"
)

// The benchmarks run each decoder beside a baseline in the same run: the
// decoder most Go code reaches for first (bytes.Reader, binary.ReadUvarint,
// io.ReadFull into a new slice), with the same checks. Report the ratio of
// the two ns/op (testutil.BenchDecodeBeside).

var errNaive = errors.New("baseline: malformed")

// naiveStatus reads a status answer's frame (length, packet ID, JSON
// length) and copies out its JSON.
func naiveStatus(b []byte) error {
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(r.Len()) {
		return errNaive
	}
	if id, err := binary.ReadUvarint(r); err != nil || id != uint64(IDStatus) {
		return errNaive
	}
	jn, err := binary.ReadUvarint(r)
	if err != nil || jn != uint64(r.Len()) {
		return errNaive
	}
	json := make([]byte, jn)
	if _, err := io.ReadFull(r, json); err != nil || !utf8.Valid(json) {
		return errNaive
	}
	return nil
}

func BenchmarkSplitStatus(b *testing.B) {
	testutil.BenchDecodeBeside(b, testutil.Vectors(b)["status-component"].Bytes, splitStatus, naiveStatus)
}

// splitStatus is how a status answer is read: its frame, then its JSON.
func splitStatus(b []byte) error {
	f, _, err := SplitFrame(b, 0)
	if err != nil {
		return err
	}
	_, err = DecodeStatusResponse(f.Data)
	return err
}

func BenchmarkLegacyDecode(b *testing.B) {
	var s LegacyStatus
	testutil.BenchDecodeBeside(b, testutil.Vectors(b)["legacy-answer"].Bytes, s.Decode, naiveLegacy)
}

// naiveLegacy decodes a legacy answer's UTF-16BE payload to a string and
// splits it on its NULs, the way the legacy answer is usually read.
func naiveLegacy(v []byte) error {
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

func utf16Decode(u []uint16) []rune {
	out := make([]rune, 0, len(u))
	for _, c := range u {
		out = append(out, rune(c))
	}
	return out
}
