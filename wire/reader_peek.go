package wire

// PeekU8 returns the next byte without consuming it; ok is false at the
// end of the input or after an error.
func (r *Reader) PeekU8() (v byte, ok bool) {
	if r.err != nil || r.off >= len(r.b) {
		return 0, false
	}
	return r.b[r.off], true
}
