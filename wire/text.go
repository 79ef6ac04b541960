package wire

import "unicode/utf8"

// windows1252 maps the bytes 0x80 to 0x9F of Windows-1252 to runes; the
// five bytes the code page leaves undefined map to U+FFFD, as the WHATWG
// decoder and iconv-lite (GameDig's) read them. Bytes 0xA0 to 0xFF are
// Latin-1's, the rune of the same number.
var windows1252 = [32]rune{
	'€', '\uFFFD', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\uFFFD', 'Ž', '\uFFFD',
	'\uFFFD', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\uFFFD', 'ž', 'Ÿ',
}

// AppendWindows1252 appends s, text in Windows-1252 (what the older game
// engines send and GameDig reads as "latin1"), to dst as UTF-8. It
// allocates nothing when dst has room.
func AppendWindows1252(dst, s []byte) []byte {
	for _, c := range s {
		switch {
		case c < 0x80:
			dst = append(dst, c)
		case c < 0xA0:
			dst = utf8.AppendRune(dst, windows1252[c-0x80])
		default:
			dst = utf8.AppendRune(dst, rune(c))
		}
	}
	return dst
}
