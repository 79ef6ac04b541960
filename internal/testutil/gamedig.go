package testutil

import (
	"encoding/json"
	"testing"
	"time"
)

// GamedigAt runs GameDig's command-line client against exactly
// host:port (--givenPortOnly: no query port offset of the game's applied)
// as game id kind, and returns its JSON answer, also decoded into into.
// options are further command-line options (--login, --password…).
func GamedigAt(t testing.TB, kind, address string, into any, options ...string) []byte {
	t.Helper()
	args := append([]string{"--type", kind, "--givenPortOnly", address}, options...)
	out := RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js", args...)
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("gamedig --type %s --givenPortOnly %s printed %s: %v", kind, address, out, err)
	}
	return out
}
