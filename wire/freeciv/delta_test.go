package freeciv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// deltaSpec is the packet kind of the delta vectors in testdata.
var deltaSpec = PacketSpec{Type: 0x63, Fields: []FieldSpec{
	{Name: "id", Kind: KindUint16, Key: true},
	{Name: "owner", Kind: KindUint8},
	{Name: "hp", Kind: KindUint8},
	{Name: "moved", Kind: KindBool},
	{Name: "name", Kind: KindString, Size: 16},
	{Name: "done", Kind: KindBool},
	{Name: "counts", Kind: KindArray, Elem: KindUint16, Len: 5, Diff: true},
	{Name: "score", Kind: KindSint32},
}}

// unit builds deltaSpec values.
func unit(id, owner, hp int64, moved bool, name string, done bool, counts [5]int64, score int64) []Value {
	b := func(v bool) Value {
		if v {
			return Value{Int: 1}
		}
		return Value{}
	}
	c := make([]Value, 5)
	for i, n := range counts {
		c[i].Int = n
	}
	return []Value{{Int: id}, {Int: owner}, {Int: hp}, b(moved), {Str: []byte(name)}, b(done), {Elems: c}, {Int: score}}
}

var (
	deltaFirst  = unit(7, 1, 10, false, "Warrior", false, [5]int64{}, 0)
	deltaUpdate = unit(7, 1, 8, true, "Warrior", false, [5]int64{0, 300, 0, 0, 2}, -5)
)

// richSpec has a field of every kind, a BOOL key and more than 32 non-key
// fields, so the bit vector spans several bytes and a bitpack word.
var richSpec = func() PacketSpec {
	p := PacketSpec{Type: 0x1234, Fields: []FieldSpec{
		{Name: "k16", Kind: KindUint16, Key: true},
		{Name: "kbool", Kind: KindBool, Key: true},
		{Name: "kstr", Kind: KindString, Size: 8, Key: true},
	}}
	kinds := []FieldSpec{
		{Kind: KindUint8}, {Kind: KindUint16}, {Kind: KindUint32},
		{Kind: KindSint8}, {Kind: KindSint16}, {Kind: KindSint32},
		{Kind: KindBool}, {Kind: KindString, Size: 12},
		{Kind: KindArray, Elem: KindSint8, Len: 3},
		{Kind: KindArray, Elem: KindString, Size: 5, Len: 4, Diff: true},
		{Kind: KindArray, Elem: KindBool, Len: 6, Diff: true},
		{Kind: KindArray, Elem: KindUint32, Len: 255, Diff: true},
	}
	for i := range 3 {
		for _, k := range kinds {
			k.Name = fmt.Sprintf("f%d_%d", i, len(p.Fields))
			p.Fields = append(p.Fields, k)
		}
	}
	return p
}()

func deltaBody(t testing.TB, name string) []byte {
	t.Helper()
	v := testutil.Vectors(t)[name].Bytes
	if len(v) < 4 || int(v[0])<<8|int(v[1]) != len(v) || int(v[2])<<8|int(v[3]) != int(deltaSpec.Type) {
		t.Fatalf("%s: not a 2-byte-type packet of type %#x", name, deltaSpec.Type)
	}
	return v[4:]
}

func TestDeltaVectors(t *testing.T) {
	first, update := deltaBody(t, "delta-first"), deltaBody(t, "delta-update")
	tests := []struct {
		name       string
		prev, want []Value
		body       []byte
	}{
		{"delta-first", nil, deltaFirst, first},
		{"delta-update", deltaFirst, deltaUpdate, update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deltaSpec.Decode(nil, tt.prev, tt.body)
			if err != nil || !deltaSpec.Equal(got, tt.want) {
				t.Fatalf("Decode: got %v (%v), want %v", got, err, tt.want)
			}
			out, err := deltaSpec.Encode(nil, tt.prev, tt.want)
			if err != nil || !bytes.Equal(out, tt.body) {
				t.Fatalf("Encode: got %x (%v), want %x", out, err, tt.body)
			}
			keys, err := deltaSpec.DecodeKeys(nil, tt.body)
			if err != nil || len(keys) != 1 || keys[0].Int != 7 {
				t.Fatalf("DecodeKeys: got %v (%v), want [{7}]", keys, err)
			}
		})
	}
	t.Run("the whole packet", func(t *testing.T) {
		body, err := deltaSpec.Encode(nil, deltaFirst, deltaUpdate)
		if err != nil {
			t.Fatal(err)
		}
		p, err := AppendPacket(nil, 2, deltaSpec.Type, body)
		if want := testutil.Vectors(t)["delta-update"].Bytes; err != nil || !bytes.Equal(p, want) {
			t.Fatalf("got %x (%v), want %x", p, err, want)
		}
	})
	t.Run("unchanged fields keep prev's values", func(t *testing.T) {
		// Only the key and the folded bools: every other field from prev.
		got, err := deltaSpec.Decode(nil, deltaUpdate, []byte{0x04, 0x00, 0x07})
		want := unit(7, 1, 8, true, "Warrior", false, [5]int64{0, 300, 0, 0, 2}, -5)
		if err != nil || !deltaSpec.Equal(got, want) {
			t.Fatalf("got %v (%v), want %v", got, err, want)
		}
		// A cleared folded bit is the value false, not "unchanged".
		got, err = deltaSpec.Decode(nil, deltaUpdate, []byte{0x00, 0x00, 0x07})
		want[3].Int = 0
		if err != nil || !deltaSpec.Equal(got, want) {
			t.Fatalf("got %v (%v), want %v", got, err, want)
		}
	})
}

// Every proper prefix of a delta body fails cleanly.
func TestDeltaTruncation(t *testing.T) {
	for _, name := range []string{"delta-first", "delta-update"} {
		t.Run(name, func(t *testing.T) {
			body := deltaBody(t, name)
			for n := range len(body) {
				_, err := deltaSpec.Decode(nil, deltaFirst, body[:n])
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("prefix of %d bytes: got %v, want a *wire.DecodeError", n, err)
				}
			}
		})
	}
}

func TestDeltaErrors(t *testing.T) {
	boolSpec := PacketSpec{Fields: []FieldSpec{
		{Name: "key", Kind: KindBool, Key: true},
		{Name: "flags", Kind: KindArray, Elem: KindBool, Len: 3},
		{Name: "b", Kind: KindBool},
	}}
	tests := []struct {
		name  string
		spec  *PacketSpec
		body  []byte
		want  error
		field string
		off   int
	}{
		{"empty", &deltaSpec, nil, wire.ErrTruncated, "fields", 0},
		{"padding bit", &deltaSpec, []byte{0x80, 0, 7}, wire.ErrRange, "fields", 0},
		{"trailing byte", &deltaSpec, []byte{0x00, 0, 7, 0}, wire.ErrTooLong, "packet", 3},
		{"diff index 5 of 5", &deltaSpec, []byte{0x20, 0, 7, 5, 0, 1, 0xff}, wire.ErrRange, "counts", 3},
		{"diff index repeated", &deltaSpec, []byte{0x20, 0, 7, 1, 0, 1, 1, 0, 2, 0xff}, wire.ErrRange, "counts", 6},
		{"diff index decreasing", &deltaSpec, []byte{0x20, 0, 7, 2, 0, 1, 1, 0, 2, 0xff}, wire.ErrRange, "counts", 6},
		{"diff without end", &deltaSpec, []byte{0x20, 0, 7, 1, 0, 1}, wire.ErrTruncated, "counts", 6},
		{"string unterminated", &deltaSpec, append([]byte{0x08, 0, 7}, bytes.Repeat([]byte("x"), 16)...), wire.ErrTooLong, "name", 3},
		{"string at its bound", &deltaSpec, append(append([]byte{0x08, 0, 7}, bytes.Repeat([]byte("x"), 16)...), 0), wire.ErrTooLong, "name", 3},
		{"bool key 2", &boolSpec, []byte{0x00, 2}, wire.ErrRange, "key", 1},
		{"bool element 2", &boolSpec, []byte{0x01, 1, 0, 2, 1}, wire.ErrRange, "flags", 3},
		{"padding after 2 bits", &boolSpec, []byte{0x04, 0}, wire.ErrRange, "fields", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.spec.Decode(nil, nil, tt.body)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.off {
				t.Fatalf("got %v, want %v on field %q at %d", err, tt.want, tt.field, tt.off)
			}
		})
	}
	t.Run("diff with only the end index", func(t *testing.T) {
		got, err := deltaSpec.Decode(nil, deltaUpdate, []byte{0x24, 0, 7, 0xff})
		if err != nil || !deltaSpec.Equal(got, deltaUpdate) {
			t.Fatalf("got %v (%v), want %v", got, err, deltaUpdate)
		}
	})
	t.Run("prev of the wrong shape", func(t *testing.T) {
		if _, err := deltaSpec.Decode(nil, deltaFirst[:3], deltaBody(t, "delta-first")); !errors.Is(err, ErrSpec) {
			t.Fatalf("got %v, want %v", err, ErrSpec)
		}
	})
	t.Run("prev untouched by a failed decode", func(t *testing.T) {
		prev := unit(7, 1, 10, false, "Warrior", false, [5]int64{}, 0)
		if _, err := deltaSpec.Decode(nil, prev, []byte{0x3f, 0, 7, 1, 2}); err == nil {
			t.Fatal("got nil error, want one")
		}
		if !deltaSpec.Equal(prev, deltaFirst) {
			t.Fatalf("prev: got %v, want %v", prev, deltaFirst)
		}
	})
}

func TestDeltaEncodeRefusals(t *testing.T) {
	with := func(i int, v Value) []Value {
		c := cloneValues(deltaUpdate)
		c[i] = v
		return c
	}
	tests := []struct {
		name string
		spec *PacketSpec
		prev []Value
		cur  []Value
	}{
		{"uint8 256", &deltaSpec, nil, with(1, Value{Int: 256})},
		{"uint8 -1", &deltaSpec, nil, with(2, Value{Int: -1})},
		{"uint16 key 65536", &deltaSpec, nil, with(0, Value{Int: 65536})},
		{"folded bool 2", &deltaSpec, nil, with(3, Value{Int: 2})},
		{"sint32 2^31", &deltaSpec, nil, with(7, Value{Int: 1 << 31})},
		{"string too long", &deltaSpec, nil, with(4, Value{Str: bytes.Repeat([]byte("x"), 16)})},
		{"string with NUL", &deltaSpec, nil, with(4, Value{Str: []byte("a\x00")})},
		{"array too short", &deltaSpec, nil, with(6, Value{Elems: make([]Value, 4)})},
		{"array element range", &deltaSpec, nil, with(6, Value{Elems: []Value{{}, {Int: 70000}, {}, {}, {}}})},
		{"too few values", &deltaSpec, nil, deltaUpdate[:7]},
		{"prev too short", &deltaSpec, deltaFirst[:7], deltaUpdate},
		{"invalid spec", &PacketSpec{Fields: []FieldSpec{{Name: "x"}}}, nil, []Value{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.spec.Encode([]byte{0xAA}, tt.prev, tt.cur)
			if err == nil || !bytes.Equal(out, []byte{0xAA}) {
				t.Fatalf("got %x (%v), want aa and an error", out, err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		f    FieldSpec
		ok   bool
	}{
		{"uint32", FieldSpec{Kind: KindUint32}, true},
		{"no kind", FieldSpec{}, false},
		{"unknown kind", FieldSpec{Kind: 99}, false},
		{"string of size 0", FieldSpec{Kind: KindString}, false},
		{"string of size 1", FieldSpec{Kind: KindString, Size: 1}, true},
		{"array of 255 with diff", FieldSpec{Kind: KindArray, Elem: KindUint8, Len: 255, Diff: true}, true},
		{"array of 256 with diff", FieldSpec{Kind: KindArray, Elem: KindUint8, Len: 256, Diff: true}, false},
		{"array of 256", FieldSpec{Kind: KindArray, Elem: KindUint8, Len: 256}, true},
		{"array of 0", FieldSpec{Kind: KindArray, Elem: KindUint8}, false},
		{"array of arrays", FieldSpec{Kind: KindArray, Elem: KindArray, Len: 2}, false},
		{"array of strings of size 0", FieldSpec{Kind: KindArray, Elem: KindString, Len: 2}, false},
		{"array key", FieldSpec{Kind: KindArray, Elem: KindUint8, Len: 2, Key: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PacketSpec{Fields: []FieldSpec{tt.f}}
			if err := p.Validate(); (err == nil) != tt.ok {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if err := richSpec.Validate(); err != nil {
		t.Fatalf("richSpec: got %v, want nil", err)
	}
}

func cloneValues(v []Value) []Value {
	if v == nil {
		return nil
	}
	out := make([]Value, len(v))
	for i := range v {
		out[i] = Value{Int: v[i].Int, Str: bytes.Clone(v[i].Str), Elems: cloneValues(v[i].Elems)}
	}
	return out
}

// randomScalar returns a value of kind k, zero often so that deltas have
// unchanged fields.
func randomScalar(rng *rand.Rand, k Kind, size int) Value {
	if rng.IntN(3) == 0 {
		return Value{}
	}
	switch k {
	case KindUint8:
		return Value{Int: int64(rng.IntN(1 << 8))}
	case KindUint16:
		return Value{Int: int64(rng.IntN(1 << 16))}
	case KindUint32:
		return Value{Int: int64(rng.Uint32())}
	case KindSint8:
		return Value{Int: int64(int8(rng.Uint32()))}
	case KindSint16:
		return Value{Int: int64(int16(rng.Uint32()))}
	case KindSint32:
		return Value{Int: int64(int32(rng.Uint32()))}
	case KindBool:
		return Value{Int: int64(rng.IntN(2))}
	case KindString:
		s := make([]byte, rng.IntN(size))
		for i := range s {
			s[i] = byte(1 + rng.IntN(255))
		}
		return Value{Str: s}
	}
	panic("unknown kind")
}

func randomValues(rng *rand.Rand, p *PacketSpec) []Value {
	v := make([]Value, len(p.Fields))
	for i, f := range p.Fields {
		if f.Kind != KindArray {
			v[i] = randomScalar(rng, f.Kind, f.Size)
			continue
		}
		v[i].Elems = make([]Value, f.Len)
		for j := range v[i].Elems {
			v[i].Elems[j] = randomScalar(rng, f.Elem, f.Size)
		}
	}
	return v
}

// mutate changes a random subset of v's fields and elements.
func mutate(rng *rand.Rand, p *PacketSpec, v []Value) []Value {
	v = cloneValues(v)
	fresh := randomValues(rng, p)
	for i, f := range p.Fields {
		if rng.IntN(2) == 0 {
			continue
		}
		if f.Kind != KindArray {
			v[i] = fresh[i]
			continue
		}
		for j := range v[i].Elems {
			if rng.IntN(4) == 0 {
				v[i].Elems[j] = fresh[i].Elems[j]
			}
		}
	}
	return v
}

func TestDeltaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, spec := range []*PacketSpec{&deltaSpec, &richSpec} {
		t.Run(fmt.Sprintf("type %#x", spec.Type), func(t *testing.T) {
			var dst []Value
			for i := range 500 {
				// Every fifth round the receiver holds no earlier packet.
				var prev, cur []Value
				if i%5 == 0 {
					cur = randomValues(rng, spec)
				} else {
					prev = randomValues(rng, spec)
					cur = mutate(rng, spec, prev)
				}
				body, err := spec.Encode(nil, prev, cur)
				if err != nil {
					t.Fatalf("round %d: Encode: %v", i, err)
				}
				dst, err = spec.Decode(dst, prev, body)
				if err != nil || !spec.Equal(dst, cur) {
					t.Fatalf("round %d: got %v (%v), want %v", i, dst, err, cur)
				}
				if prev != nil && spec.Equal(prev, cur) && len(body) != spec.bitVectorLen()+keyLen(spec, cur) {
					t.Fatalf("round %d: unchanged packet of %d bytes, want only the bit vector and keys", i, len(body))
				}
			}
		})
	}
}

// keyLen is the encoded size of cur's key fields.
func keyLen(p *PacketSpec, cur []Value) int {
	var b []byte
	for i, f := range p.Fields {
		if f.Key {
			b, _ = appendScalar(b, f.Kind, f.Size, &cur[i])
		}
	}
	return len(b)
}

func TestDeltaZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	prev := randomValues(rng, &richSpec)
	cur := mutate(rng, &richSpec, prev)
	body, err := richSpec.Encode(nil, prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 0, 2*len(body))
	dst, err := richSpec.Decode(nil, prev, body) // grow dst's storage once
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := richSpec.DecodeKeys(nil, body)
	allocs := testing.AllocsPerRun(200, func() {
		if dst, err = richSpec.Decode(dst, prev, body); err != nil {
			panic(err)
		}
		if keys, err = richSpec.DecodeKeys(keys, body); err != nil {
			panic(err)
		}
		if out, err = richSpec.Encode(out[:0], prev, cur); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per decode/encode, want 0", allocs)
	}
}
