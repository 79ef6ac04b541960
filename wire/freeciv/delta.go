package freeciv

import (
	"bytes"
	"errors"

	"github.com/gamegate/gamegate/wire"
	"github.com/gamegate/gamegate/wire/bitpack"
)

// Kind is the wire type of a field of a delta-encoded packet.
type Kind uint8

// Field kinds. Integers are big-endian; a BOOL is one byte, 0 or 1, except
// where delta encoding folds it into its bit; a STRING ends with a NUL
// within the field's Size.
const (
	KindUint8 Kind = iota + 1
	KindUint16
	KindUint32
	KindSint8
	KindSint16
	KindSint32
	KindBool
	KindString
	KindArray // a fixed number of elements of the scalar kind Elem
)

// ErrSpec reports a PacketSpec that cannot describe a packet, or values
// that do not match their PacketSpec: a bug in the caller, not bad input.
var ErrSpec = errors.New("freeciv: invalid packet spec or values")

var errValueRange = errors.New("freeciv: value outside its field's range")

// diffEnd ends an array-diff's list of (index, value) pairs, so it is never
// an index: an array-diff field has at most 255 elements.
const diffEnd = 255

// FieldSpec describes one field of a delta-encoded packet.
type FieldSpec struct {
	Name string // the field's name, reported by decode errors
	Kind Kind
	// Key fields are sent in every packet, right after the bit vector, and
	// select which earlier packet of the kind the others are relative to.
	// A key is a scalar.
	Key bool
	// Size is the size of a KindString field, or of each string of a
	// KindArray of KindString, NUL included.
	Size int
	// Elem is the kind of a KindArray's elements; not KindArray.
	Elem Kind
	// Len is a KindArray's number of elements, 1 to MaxLenPacket, and at
	// most 255 when Diff is set.
	Len int
	// Diff sends a changed KindArray as (uint8 index, element) pairs for
	// the changed elements only, in increasing index order, ended by 255.
	Diff bool
}

// PacketSpec describes a delta-encoded packet kind: its type and its fields
// in declaration order.
type PacketSpec struct {
	Type   uint16
	Fields []FieldSpec
}

// Value is the value of one field in generic form: Int for the integer
// kinds and KindBool (0 or 1), Str for KindString (without the NUL), Elems
// for KindArray (Len values of kind Elem). The other members are unused.
type Value struct {
	Int   int64
	Str   []byte
	Elems []Value
}

// Validate checks that p can describe a packet.
func (p *PacketSpec) Validate() error {
	for i := range p.Fields {
		f := &p.Fields[i]
		switch {
		case f.Kind == KindArray:
			if f.Key || !scalarValid(f.Elem, f.Size) || f.Len < 1 || f.Len > MaxLenPacket ||
				f.Diff && f.Len > diffEnd {
				return ErrSpec
			}
		case !scalarValid(f.Kind, f.Size):
			return ErrSpec
		}
	}
	return nil
}

func scalarValid(k Kind, size int) bool {
	switch k {
	case KindUint8, KindUint16, KindUint32, KindSint8, KindSint16, KindSint32, KindBool:
		return true
	case KindString:
		return size >= 1
	}
	return false
}

// folded reports whether f's value travels as its bit in the bit vector.
func (f *FieldSpec) folded() bool { return f.Kind == KindBool && !f.Key }

// bitVectorLen is the size of the bit vector: one bit per non-key field.
func (p *PacketSpec) bitVectorLen() int {
	n := 0
	for i := range p.Fields {
		if !p.Fields[i].Key {
			n++
		}
	}
	return (n + 7) / 8
}

// conforms reports whether v holds one well-shaped value per field of p.
func (p *PacketSpec) conforms(v []Value) bool {
	if len(v) != len(p.Fields) {
		return false
	}
	for i := range p.Fields {
		if p.Fields[i].Kind == KindArray && len(v[i].Elems) != p.Fields[i].Len {
			return false
		}
	}
	return true
}

// Encode appends the delta-encoded body of cur relative to prev, the last
// packet of this kind with the same keys that the receiver holds (nil when
// it holds none: the fields are then relative to zero values). The body is
// the bit vector, one bit per non-key field in declaration order, bit i in
// byte i/8 under mask 1<<(i%8), set for a changed field and, for a non-key
// BOOL, equal to the value; then the key fields; then each changed field
// that is not a BOOL, an array-diff field as its changed (index, element)
// pairs and 255. The packet header is not included: see [AppendPacket].
//
// It refuses, returning dst unchanged, a spec that does not validate,
// values that do not match it, and a value outside its field's range: an
// integer beyond its kind, a BOOL other than 0 or 1, a string too long or
// containing a NUL. It allocates nothing when dst has room.
func (p *PacketSpec) Encode(dst []byte, prev, cur []Value) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return dst, err
	}
	if !p.conforms(cur) || prev != nil && !p.conforms(prev) {
		return dst, ErrSpec
	}
	start := len(dst)
	w := bitpack.NewWriter(dst)
	for i := range p.Fields {
		f := &p.Fields[i]
		switch {
		case f.Key:
		case f.folded():
			if cur[i].Int != 0 && cur[i].Int != 1 {
				return dst, errValueRange
			}
			w.WriteBool(cur[i].Int == 1)
		default:
			w.WriteBool(!equalField(f, at(prev, i), &cur[i]))
		}
	}
	b, err := w.Flush()
	if err != nil {
		return dst, err
	}
	for i := range p.Fields {
		if f := &p.Fields[i]; f.Key {
			if b, err = appendScalar(b, f.Kind, f.Size, &cur[i]); err != nil {
				return b[:start], err
			}
		}
	}
	for i := range p.Fields {
		f := &p.Fields[i]
		if f.Key || f.folded() || equalField(f, at(prev, i), &cur[i]) {
			continue
		}
		if b, err = appendField(b, f, at(prev, i), &cur[i]); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// at returns &v[i], or nil, standing for the zero value, when v is nil.
func at(v []Value, i int) *Value {
	if v == nil {
		return nil
	}
	return &v[i]
}

func appendField(b []byte, f *FieldSpec, prev, cur *Value) ([]byte, error) {
	if f.Kind != KindArray {
		return appendScalar(b, f.Kind, f.Size, cur)
	}
	var err error
	for j := range cur.Elems {
		var old *Value
		if prev != nil {
			old = &prev.Elems[j]
		}
		if f.Diff {
			if equalScalar(f.Elem, old, &cur.Elems[j]) {
				continue
			}
			b = append(b, byte(j))
		}
		if b, err = appendScalar(b, f.Elem, f.Size, &cur.Elems[j]); err != nil {
			return b, err
		}
	}
	if f.Diff {
		b = append(b, diffEnd)
	}
	return b, nil
}

func appendScalar(b []byte, k Kind, size int, v *Value) ([]byte, error) {
	n := v.Int
	switch k {
	case KindUint8:
		if n < 0 || n > 0xFF {
			return b, errValueRange
		}
		return append(b, byte(n)), nil
	case KindUint16:
		if n < 0 || n > 0xFFFF {
			return b, errValueRange
		}
		return AppendU16(b, uint16(n)), nil
	case KindUint32:
		if n < 0 || n > 0xFFFFFFFF {
			return b, errValueRange
		}
		return AppendU32(b, uint32(n)), nil
	case KindSint8:
		if n < -0x80 || n > 0x7F {
			return b, errValueRange
		}
		return append(b, byte(n)), nil
	case KindSint16:
		if n < -0x8000 || n > 0x7FFF {
			return b, errValueRange
		}
		return AppendS16(b, int16(n)), nil
	case KindSint32:
		if n < -0x80000000 || n > 0x7FFFFFFF {
			return b, errValueRange
		}
		return AppendS32(b, int32(n)), nil
	case KindBool:
		if n != 0 && n != 1 {
			return b, errValueRange
		}
		return append(b, byte(n)), nil
	case KindString:
		return AppendString(b, v.Str, size)
	}
	return b, ErrSpec
}

// Equal reports whether a and b, both matching p, hold the same packet.
func (p *PacketSpec) Equal(a, b []Value) bool {
	if len(a) != len(p.Fields) || len(b) != len(p.Fields) {
		return false
	}
	for i := range p.Fields {
		if !equalField(&p.Fields[i], &a[i], &b[i]) {
			return false
		}
	}
	return true
}

// equalField compares a field's values; a nil a stands for the zero value.
func equalField(f *FieldSpec, a, b *Value) bool {
	if f.Kind != KindArray {
		return equalScalar(f.Kind, a, b)
	}
	if a != nil && len(a.Elems) != len(b.Elems) {
		return false
	}
	for j := range b.Elems {
		var old *Value
		if a != nil {
			old = &a.Elems[j]
		}
		if !equalScalar(f.Elem, old, &b.Elems[j]) {
			return false
		}
	}
	return true
}

// equalScalar compares by kind, so members a kind does not use never count;
// a nil a stands for the zero value.
func equalScalar(k Kind, a, b *Value) bool {
	if k == KindString {
		if a == nil {
			return len(b.Str) == 0
		}
		return bytes.Equal(a.Str, b.Str)
	}
	if a == nil {
		return b.Int == 0
	}
	return a.Int == b.Int
}

// Decode reads a delta-encoded body (a packet's bytes after its header) and
// returns the packet's values in dst's storage: the fields the body carries
// from it, the others from prev, the receiver's last packet of this kind
// with the same keys, or zero values when prev is nil (find prev with
// [PacketSpec.DecodeKeys]). Strings are copied, not aliased, since such a
// cache outlives the frame.
//
// dst must not share storage with prev: keep two []Value per cache entry
// and swap them after a successful Decode. With dst's storage grown by
// earlier calls Decode allocates nothing. On error prev is untouched and
// dst's contents are unspecified; the returned slice still carries its
// storage for reuse.
//
// Every field is range-checked: a BOOL byte other than 0 or 1, a string
// with no NUL within its Size, an array-diff index not below Len or not
// above the previous index, non-zero padding bits in the bit vector, and
// bytes after the last field are refused with a [*wire.DecodeError] naming
// the field. A spec that does not validate, or a prev that does not match
// it, is refused with [ErrSpec].
func (p *PacketSpec) Decode(dst, prev []Value, body []byte) ([]Value, error) {
	if err := p.Validate(); err != nil {
		return dst, err
	}
	if prev != nil && !p.conforms(prev) {
		return dst, ErrSpec
	}
	dst = resize(dst, len(p.Fields))
	for i := range p.Fields {
		assignField(&p.Fields[i], &dst[i], at(prev, i))
	}
	r := NewDataReader(body)
	bv := r.Bytes("fields", p.bitVectorLen())
	if r.Err() != nil {
		return dst, r.Err()
	}
	for i := range p.Fields {
		if f := &p.Fields[i]; f.Key {
			readScalar(&r, f.Kind, f.Size, f.Name, &dst[i])
		}
	}
	bits := bitpack.NewReader(bv)
	for i := range p.Fields {
		f := &p.Fields[i]
		if f.Key {
			continue
		}
		// The bit vector holds a bit per non-key field: this cannot fail.
		set, _ := bits.ReadBool()
		switch {
		case f.folded():
			dst[i].Int = 0
			if set {
				dst[i].Int = 1
			}
		case !set:
		case f.Kind != KindArray:
			readScalar(&r, f.Kind, f.Size, f.Name, &dst[i])
		case f.Diff:
			readDiff(&r, f, &dst[i])
		default:
			for j := range dst[i].Elems {
				readScalar(&r, f.Elem, f.Size, f.Name, &dst[i].Elems[j])
			}
		}
		if r.Err() != nil {
			return dst, r.Err()
		}
	}
	if bits.AlignToByte() != nil {
		// The sender clears the bits past the last field.
		return dst, wire.NewDecodeError("fields", len(bv)-1, wire.ErrRange)
	}
	return dst, endOfPacket(&r)
}

// DecodeKeys reads only the key fields of a delta-encoded body, one Value
// per key field in declaration order, into dst's storage: what a receiver
// needs to find the prev to pass to Decode. Strings are copied.
func (p *PacketSpec) DecodeKeys(dst []Value, body []byte) ([]Value, error) {
	if err := p.Validate(); err != nil {
		return dst, err
	}
	dst = dst[:0]
	r := NewDataReader(body)
	r.Skip("fields", p.bitVectorLen())
	for i := range p.Fields {
		if f := &p.Fields[i]; f.Key {
			dst = resize(dst, len(dst)+1)
			readScalar(&r, f.Kind, f.Size, f.Name, &dst[len(dst)-1])
		}
	}
	return dst, r.Err()
}

// readDiff applies an array-diff's (index, element) pairs to v.
func readDiff(r *DataReader, f *FieldSpec, v *Value) {
	last := -1
	for r.Err() == nil {
		// Look at the index before consuming it, so that the error for a
		// bad one carries the index's own offset.
		peek := r.Reader
		i := int(peek.U8(f.Name))
		if peek.Err() == nil && i != diffEnd && (i >= f.Len || i <= last) {
			r.Fail(f.Name, wire.ErrRange)
			return
		}
		r.U8(f.Name)
		if r.Err() != nil || i == diffEnd {
			return
		}
		readScalar(r, f.Elem, f.Size, f.Name, &v.Elems[i])
		last = i
	}
}

func readScalar(r *DataReader, k Kind, size int, name string, v *Value) {
	switch k {
	case KindUint8:
		v.Int = int64(r.U8(name))
	case KindUint16:
		v.Int = int64(r.U16BE(name))
	case KindUint32:
		v.Int = int64(r.U32BE(name))
	case KindSint8:
		v.Int = int64(r.S8(name))
	case KindSint16:
		v.Int = int64(r.S16(name))
	case KindSint32:
		v.Int = int64(r.S32(name))
	case KindBool:
		v.Int = 0
		if r.Bool(name) {
			v.Int = 1
		}
	case KindString:
		v.Str = append(v.Str[:0], r.String(name, size)...)
	}
}

// assignField sets dst to a copy of src, or to the zero value when src is
// nil, reusing dst's storage.
func assignField(f *FieldSpec, dst, src *Value) {
	if f.Kind != KindArray {
		assignScalar(dst, src)
		dst.Elems = dst.Elems[:0]
		return
	}
	dst.Int, dst.Str = 0, dst.Str[:0]
	dst.Elems = resize(dst.Elems, f.Len)
	for j := range dst.Elems {
		var s *Value
		if src != nil {
			s = &src.Elems[j]
		}
		assignScalar(&dst.Elems[j], s)
		dst.Elems[j].Elems = dst.Elems[j].Elems[:0]
	}
}

func assignScalar(dst, src *Value) {
	if src == nil {
		dst.Int, dst.Str = 0, dst.Str[:0]
		return
	}
	dst.Int, dst.Str = src.Int, append(dst.Str[:0], src.Str...)
}

// resize returns v with length n, keeping the storage of the values it
// already holds (within its capacity) for reuse.
func resize(v []Value, n int) []Value {
	if n <= cap(v) {
		return v[:n]
	}
	return append(v[:cap(v)], make([]Value, n-cap(v))...)
}
