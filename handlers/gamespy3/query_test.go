package gamespy3

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wiregs3 "github.com/gamegate/gamegate/wire/gamespy3"
)

func protocol(t *testing.T, cfg Config) *QueryProtocol {
	p, err := cfg.NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	return p.(*QueryProtocol)
}

// A server that wants no challenge (it answers 0) is asked without one;
// answers of another session, and a part seen twice, are dropped.
func TestStatusWithoutChallenge(t *testing.T) {
	var statusLen atomic.Int64 // written by the server's goroutine
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		session := binary.BigEndian.Uint32(req[3:7])
		if req[2] == wiregs3.TypeChallenge {
			return [][]byte{append(append([]byte(nil), req[2:7]...), "0\x00"...)}
		}
		statusLen.Store(int64(len(req)))
		body := []byte("hostname\x00one\x00numplayers\x001\x00\x00\x01player_\x00\x00Ann\x00\x00")
		return [][]byte{
			wiregs3.AppendPart(nil, session+1, 0, true, []byte("hostname\x00forged\x00\x00")),
			wiregs3.AppendPart(nil, session, 1, true, nil),
			wiregs3.AppendPart(nil, session, 1, true, []byte("mapname\x00x\x00")), // part 1 again
			wiregs3.AppendPart(nil, session, 0, false, body),
		}
	})
	st, err := protocol(t, Config{}).Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := statusLen.Load(); n != 11 {
		t.Errorf("the status request was %d bytes, want 11 (no challenge)", n)
	}
	if st.Name != "one" || st.NumPlayers != 1 || len(st.Players) != 1 || st.Players[0].Name != "Ann" {
		t.Fatalf("got %+v", st)
	}
}

// A part that never comes is a timeout.
func TestStatusMissingPartTimesOut(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if req[2] == wiregs3.TypeChallenge {
			return [][]byte{append(append([]byte(nil), req[2:7]...), "5\x00"...)}
		}
		return [][]byte{wiregs3.AppendPart(nil, binary.BigEndian.Uint32(req[3:7]), 2, true, nil)}
	})
	p := protocol(t, Config{})
	p.Timeout, p.Retries = 100*time.Millisecond, -1
	if _, err := p.Status(context.Background(), addr.String()); query.HTTPStatus(err) != 504 {
		t.Fatalf("got %v, want a timeout", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Encoding: "latin1"}, {Budget: query.Budget{MaxPackets: 200}}, {Attempts: query.Attempts{Retries: 11}}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := (&Config{Encoding: "utf-8"}).Validate(); err != nil {
		t.Error(err)
	}
}

// Columns of one value each, every one of its own item type at offset
// 255, would make 256 items per 8 bytes of answer: the empty items are
// bounded, so 60 KB of them is a bad answer, not 100 MB of heap. A
// column at a large offset alone still reads as GameDig reads it.
func TestColumnsEmptyItemsBounded(t *testing.T) {
	body := []byte("hostname\x00x\x00\x00")
	for i := 0; len(body) < 60000; i++ {
		body = append(body, fmt.Sprintf("a_%x\x00", i)...)
		body = append(body, 0xff, 'x', 0, 0)
	}
	p := &QueryProtocol{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := p.readColumns([][]byte{body})
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Error("60 KB of columns at offset 255 read without error")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("reading 60 KB of columns allocated %d MB, want at most 8", got>>20)
	}

	raw, players, err := p.readColumns([][]byte{[]byte("hostname\x00x\x00\x00player_\x00\xc8Ann\x00\x00")})
	if err != nil {
		t.Fatal(err)
	}
	if len(players) != 201 || players[200].Name != "Ann" || len(raw["playerTeamInfo"].(map[string][]map[string]any)[""]) != 201 {
		t.Fatalf("a column at offset 200: got %d players", len(players))
	}
}
