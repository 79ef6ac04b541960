package bitpack_test

import (
	"errors"
	"fmt"

	"github.com/gamegate/gamegate/wire"
	"github.com/gamegate/gamegate/wire/bitpack"
)

// A message with a count in [0,32], that many 10-bit scores and a flag: the
// count is range-checked on read, so a sender cannot claim 63 elements.
func Example() {
	const maxScores = 32
	scores := []uint32{1000, 7, 512}

	w := bitpack.NewWriter(make([]byte, 0, 64))
	if err := w.WriteInt(int32(len(scores)), 0, maxScores); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range scores {
		w.WriteBits(s, 10)
	}
	w.WriteBool(true)
	bits := w.BitsWritten()
	packet, err := w.Flush()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bits in %d bytes\n", bits, len(packet))

	r := bitpack.NewReader(packet)
	count, _ := r.ReadInt(0, maxScores)
	for range count {
		s, _ := r.ReadBits(10)
		fmt.Print(s, " ")
	}
	flag, _ := r.ReadBool()
	fmt.Println(flag, r.Err())

	// The same 6 bits carrying 63 are refused.
	r = bitpack.NewReader([]byte{63})
	_, err = r.ReadInt(0, maxScores)
	var de *wire.DecodeError
	fmt.Println(errors.Is(err, wire.ErrRange), errors.As(err, &de) && de.Offset == 0)
	// Output:
	// 37 bits in 5 bytes
	// 1000 7 512 true <nil>
	// true true
}
