package serverbrowser

import (
	"html"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Badge is what a server's status badge shows.
type Badge struct {
	Name       string
	Players    int
	MaxPlayers int
	Up         bool
}

// maxBadgeName bounds the name shown on a badge, in characters.
const maxBadgeName = 40

// badgeText makes s safe as SVG text: valid UTF-8 without the control
// characters XML forbids, at most max characters, escaped.
func badgeText(s string, limit int) (text string, chars int) {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff {
			continue
		}
		if chars == limit {
			b.WriteString("…")
			chars++
			break
		}
		b.WriteRune(r)
		chars++
	}
	return html.EscapeString(b.String()), chars
}

// AppendSVG appends the badge as an SVG image: the server's name on the
// left, players/max (green) or "down" (red) on the right. Every text is
// escaped; widths are estimated from the number of characters, so the
// image needs no font metrics.
func (b Badge) AppendSVG(dst []byte) []byte {
	name, nameChars := badgeText(b.Name, maxBadgeName)
	if nameChars == 0 {
		name, nameChars = "server", 6
	}
	status, color := "down", "#c0392b"
	if b.Up {
		status, color = strconv.Itoa(b.Players)+"/"+strconv.Itoa(b.MaxPlayers), "#2e8b57"
	}
	const charWidth, pad = 7, 8
	left := nameChars*charWidth + 2*pad
	right := len(status)*charWidth + 2*pad
	w := strconv.Itoa
	dst = append(dst, `<svg xmlns="http://www.w3.org/2000/svg" width="`+w(left+right)+`" height="20" role="img" aria-label="`+name+`: `+status+`">`...)
	dst = append(dst, `<title>`+name+`: `+status+`</title>`...)
	dst = append(dst, `<rect width="`+w(left)+`" height="20" fill="#555"/>`...)
	dst = append(dst, `<rect x="`+w(left)+`" width="`+w(right)+`" height="20" fill="`+color+`"/>`...)
	dst = append(dst, `<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">`...)
	dst = append(dst, `<text x="`+w(pad)+`" y="14">`+name+`</text>`...)
	dst = append(dst, `<text x="`+w(left+pad)+`" y="14">`+status+`</text>`...)
	return append(dst, "</g></svg>\n"...)
}
