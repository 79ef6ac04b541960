package duration

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// TestReadsAsCaddyDuration holds Duration to caddy.Duration's reading of
// the same JSON, so that a Config moved from a Caddy module to a handler
// loads every configuration it loaded before.
func TestReadsAsCaddyDuration(t *testing.T) {
	for _, in := range []string{`500000000`, `"500ms"`, `"1h30m"`, `"2d"`, `"1.5d"`, `"1d12h"`, `"-1d"`, `"2562047h"`, `0`, `-1`,
		`"x"`, `"d"`, `"1x"`, `"1dd"`, `true`, `"1"`, `1.5`} {
		t.Run(in, func(t *testing.T) {
			var want caddy.Duration
			wantErr := json.Unmarshal([]byte(in), &want)
			var got Duration
			gotErr := json.Unmarshal([]byte(in), &got)
			if (gotErr != nil) != (wantErr != nil) || time.Duration(got) != time.Duration(want) {
				t.Fatalf("got %v (%v), want %v (%v)", got, gotErr, time.Duration(want), wantErr)
			}
		})
	}
}

// TestEncodesNanoseconds: adapters write durations as numbers.
func TestEncodesNanoseconds(t *testing.T) {
	b, err := json.Marshal(struct {
		D Duration `json:"d"`
	}{Duration(time.Second)})
	if err != nil || string(b) != `{"d":1000000000}` {
		t.Fatalf("got %s (%v), want {\"d\":1000000000}", b, err)
	}
}
