package testutil

import (
	"encoding/json"
	"testing"
	"time"
)

// GamedigAt runs GameDig's command-line client against exactly
// host:port (--givenPortOnly: no query port offset of the game's applied)
// as game id kind, with the options extra (such as "--token", "…"), and
// returns its JSON answer, also decoded into into.
func GamedigAt(t testing.TB, kind, address string, into any, extra ...string) []byte {
	t.Helper()
	args := append(append([]string{"--type", kind, "--givenPortOnly"}, extra...), address)
	out := RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js", args...)
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("gamedig --type %s --givenPortOnly %s printed %s: %v", kind, address, out, err)
	}
	return out
}
