package testutil

import (
	"encoding/json"
	"testing"
	"time"
)

// GamedigAt runs GameDig's command-line client against exactly
// host:port (--givenPortOnly: no query port offset of the game's applied)
// as game id kind, and returns its JSON answer, also decoded into into.
func GamedigAt(t testing.TB, kind, address string, into any) []byte {
	t.Helper()
	out := RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js", "--type", kind, "--givenPortOnly", address)
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("gamedig --type %s --givenPortOnly %s printed %s: %v", kind, address, out, err)
	}
	return out
}
