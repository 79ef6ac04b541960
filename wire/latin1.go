package wire

import "unicode/utf8"

// AppendLatin1 appends b, read as ISO-8859-1 (each byte the code point of
// its value, as Node.js's "latin1" reads it), to dst as UTF-8.
func AppendLatin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			continue
		}
		dst = utf8.AppendRune(dst, rune(c))
	}
	return dst
}
