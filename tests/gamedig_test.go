package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gamedigFields are the fields of GameDig's results (v5: its Results
// class, with connect and ping added by its query runner), in the order
// the comparison table lists them.
var gamedigFields = []string{"name", "map", "password", "numplayers", "maxplayers", "players", "bots",
	"connect", "queryPort", "ping", "version", "raw"}

// gamedigKnown is a difference from GameDig that is GameDig's own and is
// not copied: "type", where GameDig's JSON type is wrong and the values
// agree once its string is read as what it holds; or "value", where its
// value differs. Each must be seen, so that the docs' list stays true.
type gamedigKnown struct {
	kind, why string
}

// compareGamedig checks gamegate's status (ours, as answered) against
// GameDig's result for the same server (theirs, as its CLI printed it),
// field by field: the same field names, JSON types and values; for
// players and bots the same counts and names, and every per-player raw
// field GameDig has, with its type and value (ping, a measurement, by type
// only). ping and raw are compared by type: a measurement, and each
// protocol's own data. It logs the comparison as a table under title.
func compareGamedig(t *testing.T, title string, ours, theirs []byte, known map[string]gamedigKnown) {
	t.Helper()
	var us, gd map[string]any
	if err := json.Unmarshal(ours, &us); err != nil {
		t.Fatalf("gamegate's status %s: %v", ours, err)
	}
	if err := json.Unmarshal(theirs, &gd); err != nil || gd["error"] != nil {
		t.Fatalf("gamedig printed %.500s (%v)", theirs, err)
	}
	for k := range gd {
		if !slices.Contains(gamedigFields, k) {
			t.Errorf("gamedig's result has a field %q that the comparison does not know", k)
		}
	}
	rows := []string{"| field | gamegate | gamedig | |", "|---|---|---|---|"}
	for _, f := range gamedigFields {
		u, uok := us[f]
		g, gok := gd[f]
		if !uok || !gok {
			t.Errorf("%s: gamegate has it: %v, gamedig has it: %v", f, uok, gok)
			continue
		}
		typeSame := jsonType(u) == jsonType(g)
		valueSame, detail := true, ""
		switch f {
		case "ping", "raw":
		case "players", "bots":
			valueSame, detail = samePlayers(u, g)
		default:
			valueSame = fmt.Sprint(u) == fmt.Sprint(g)
		}
		verdict := "same"
		k, isKnown := known[f]
		switch {
		case isKnown && k.kind == "type":
			if typeSame {
				t.Errorf("%s: gamedig's known type difference (%s) is no longer seen: both %s", f, k.why, jsonType(u))
			} else if fmt.Sprint(u) != fmt.Sprint(asType(g, u)) {
				t.Errorf("%s: gamegate %v, gamedig %v (read as %v)", f, u, g, asType(g, u))
			}
			verdict = "GameDig's bug: " + k.why
		case isKnown && k.kind == "value":
			if valueSame {
				t.Errorf("%s: gamedig's known difference (%s) is no longer seen: both %v", f, k.why, u)
			}
			if !typeSame {
				t.Errorf("%s: gamegate's is a %s, gamedig's a %s", f, jsonType(u), jsonType(g))
			}
			verdict = "differs: " + k.why
		case !typeSame:
			t.Errorf("%s: gamegate's is a %s (%v), gamedig's a %s (%v)", f, jsonType(u), u, jsonType(g), g)
			verdict = "TYPE DIFFERS"
		case !valueSame:
			t.Errorf("%s: gamegate %v, gamedig %v %s", f, show(u), show(g), detail)
			verdict = "VALUE DIFFERS"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", f, show(u), show(g), verdict))
	}
	t.Logf("%s\n%s", title, strings.Join(rows, "\n"))
}

// samePlayers compares two lists of players: the same names (in any
// order), and for each player every raw field GameDig's has, with the
// same type and, but for ping, the same value.
func samePlayers(us, gd any) (bool, string) {
	u, _ := us.([]any)
	g, _ := gd.([]any)
	if len(u) != len(g) {
		return false, fmt.Sprintf("(%d against %d)", len(u), len(g))
	}
	byName := map[string]map[string]any{}
	for _, p := range u {
		m, _ := p.(map[string]any)
		raw, ok := m["raw"].(map[string]any)
		if !ok {
			return false, fmt.Sprintf("(gamegate's player %v has no raw object)", p)
		}
		byName[fmt.Sprint(m["name"])] = raw
	}
	for _, p := range g {
		m, _ := p.(map[string]any)
		name := fmt.Sprint(m["name"])
		raw, ok := byName[name]
		if !ok {
			return false, fmt.Sprintf("(gamegate has no player %q)", name)
		}
		graw, _ := m["raw"].(map[string]any)
		for k, v := range graw {
			ours, ok := raw[k]
			switch {
			case !ok:
				return false, fmt.Sprintf("(player %q: gamegate has no raw.%s)", name, k)
			case jsonType(ours) != jsonType(v):
				return false, fmt.Sprintf("(player %q: raw.%s is a %s, gamedig's a %s)", name, k, jsonType(ours), jsonType(v))
			case k != "ping" && fmt.Sprint(ours) != fmt.Sprint(v):
				return false, fmt.Sprintf("(player %q: raw.%s %v, gamedig's %v)", name, k, ours, v)
			}
		}
	}
	return true, ""
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// asType reads GameDig's string g as the type of gamegate's value like:
// "12" as 12, "0" and "1" as false and true.
func asType(g, like any) any {
	s, ok := g.(string)
	if !ok {
		return g
	}
	switch like.(type) {
	case float64:
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return n
		}
	case bool:
		if n, err := strconv.Atoi(s); err == nil {
			return n != 0
		}
	}
	return g
}

// show is a value as the comparison table shows it.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []any:
		var names []string
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				var keys []string
				if raw, ok := m["raw"].(map[string]any); ok {
					for k := range raw {
						keys = append(keys, k)
					}
				}
				slices.Sort(keys)
				names = append(names, fmt.Sprintf("%v{%s}", m["name"], strings.Join(keys, ",")))
			}
		}
		slices.Sort(names)
		return fmt.Sprintf("%d: %s", len(v), strings.Join(names, " "))
	case map[string]any:
		return fmt.Sprintf("object, %d keys", len(v))
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
