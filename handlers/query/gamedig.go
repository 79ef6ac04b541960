package query

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// The readings of text values GameDig's protocols share, so that a
// status built from the same answer holds the same JSON values as
// GameDig's result.

// Number reads s as JavaScript's Number(s) does where the result is a
// finite number (GameDig's typing of numeric values): surrounding white
// space is ignored, an empty or blank text is not a number here (GameDig
// checks that the text is not empty first), and 0x, 0o and 0b prefixes
// are read as JavaScript reads them.
func Number(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false
	}
	if len(t) > 2 && t[0] == '0' {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[t[1]]
		if base != 0 {
			n, err := strconv.ParseUint(t[2:], base, 64)
			return float64(n), err == nil && !strings.ContainsAny(t[2:], "_+-")
		}
	}
	// JavaScript reads decimal notation only: no hexadecimal floats, no
	// underscores, no "inf" or "nan" (its Infinity is no JSON number).
	if strings.ContainsAny(t, "_xXpPnNiI") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// ParseInt reads s as JavaScript's parseInt(s) does, with the NaN it gives
// for a text without a leading integer read as 0 (GameDig's default).
func ParseInt(s string) int {
	n, _ := ParseIntOK(s)
	return n
}

// ParseIntOK is ParseInt, and false where JavaScript's parseInt(s) is NaN
// (no leading integer), for the fields GameDig sends as null then.
func ParseIntOK(s string) (int, bool) {
	t := strings.TrimLeft(s, " \t\n\r\v\f")
	end := 0
	if end < len(t) && (t[end] == '-' || t[end] == '+') {
		end++
	}
	digits := end
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	if end == digits {
		return 0, false
	}
	n, err := strconv.ParseInt(t[:end], 10, 64)
	if err != nil {
		return 0, true // past int64: read as 0, as it always was
	}
	return int(max(min(n, math.MaxInt32), math.MinInt32)), true
}

// ParseFloat is JavaScript's parseFloat(s): the longest decimal number
// s starts with, nil (null in JSON) for NaN or an infinity, which JSON
// cannot hold (GameDig's JSON.stringify writes null for them).
func ParseFloat(s string) any {
	t := strings.TrimLeft(s, " \t\n\r\v\f")
	end := 0
	if end < len(t) && (t[end] == '-' || t[end] == '+') {
		end++
	}
	digits := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end, digits = end+1, digits+1
	}
	if end < len(t) && t[end] == '.' {
		end++
		for end < len(t) && t[end] >= '0' && t[end] <= '9' {
			end, digits = end+1, digits+1
		}
	}
	if digits == 0 {
		return nil
	}
	if end < len(t) && (t[end] == 'e' || t[end] == 'E') {
		e := end + 1
		if e < len(t) && (t[e] == '-' || t[e] == '+') {
			e++
		}
		if e < len(t) && t[e] >= '0' && t[e] <= '9' {
			for e < len(t) && t[e] >= '0' && t[e] <= '9' {
				e++
			}
			end = e
		}
	}
	f, err := strconv.ParseFloat(t[:end], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// TrueTest is GameDig's reading of a flag: true, yes (in any case) or 1.
func TrueTest(s string) bool {
	return strings.EqualFold(s, "true") || strings.EqualFold(s, "yes") || s == "1"
}

// GameSpyKeys sets st's map, maxplayers and version from the keys
// mapname, maxplayers and gamever (text values) as GameDig's GameSpy 2
// and 3 read them, and returns the game port, hostport (0 without it).
func GameSpyKeys(st *Status, keys map[string]any) (gamePort int) {
	s := func(k string) string { v, _ := keys[k].(string); return v }
	st.Map, st.Version = s("mapname"), s("gamever")
	if _, ok := keys["maxplayers"]; ok {
		st.MaxPlayers = ParseInt(s("maxplayers"))
	}
	return ParseInt(s("hostport"))
}
