package wire

import "unicode/utf8"

// windows1252High maps the bytes 0x80 to 0x9F of Windows-1252 to runes;
// the five bytes the code page leaves undefined map to U+FFFD, as the
// iconv-lite decoder GameDig reads GameSpy servers with does. The bytes
// 0xA0 to 0xFF are ISO 8859-1's, the runes of the same value.
var windows1252High = [32]rune{
	'€', utf8.RuneError, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', utf8.RuneError, 'Ž', utf8.RuneError,
	utf8.RuneError, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', utf8.RuneError, 'ž', 'Ÿ',
}

// AppendWindows1252 appends src, text in Windows-1252 (the code page of
// GameSpy-era servers on Windows), to dst as UTF-8. ASCII is copied as it
// is, so a text without high bytes costs one pass.
func AppendWindows1252(dst, src []byte) []byte {
	for _, c := range src {
		switch {
		case c < 0x80:
			dst = append(dst, c)
		case c < 0xA0:
			dst = utf8.AppendRune(dst, windows1252High[c-0x80])
		default:
			dst = utf8.AppendRune(dst, rune(c))
		}
	}
	return dst
}

// EncodeWindows1252 appends s, UTF-8, to dst in Windows-1252, with '?' for
// each rune the code page lacks: what a server of that era sends.
func EncodeWindows1252(dst []byte, s string) []byte {
	for _, r := range s {
		switch {
		case r < 0x80 || r >= 0xA0 && r <= 0xFF:
			dst = append(dst, byte(r))
		default:
			c := byte('?')
			for i, h := range windows1252High {
				if h == r && r != utf8.RuneError {
					c = byte(0x80 + i)
				}
			}
			dst = append(dst, c)
		}
	}
	return dst
}
