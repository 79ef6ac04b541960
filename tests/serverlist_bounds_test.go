package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wire "github.com/gamegate/gamegate/wire/master"
	wireq3 "github.com/gamegate/gamegate/wire/quake3"
)

// hostileServer is a game server on its own loopback address that keeps
// itself listed with a master (a heartbeat a second, answering its
// getinfo) and answers getstatus with the largest status Quake 3 allows:
// 1,024 variables and 256 players, about 50 KB. stop ends both.
type hostileServer struct {
	addr     string
	stop     func()
	statuses atomic.Int32 // getstatus queries answered
}

func startHostileServer(t *testing.T, master, ip string) *hostileServer {
	t.Helper()
	c := testutil.DialUDP(t, ip+":0", master)
	status := wireq3.Response{Kind: wireq3.KindStatus}
	status.Vars = append(status.Vars, wireq3.Var{Key: []byte("sv_hostname"), Value: []byte("^1Hostile <b>" + ip)},
		wireq3.Var{Key: []byte("mapname"), Value: []byte("oa_dm1")}, wireq3.Var{Key: []byte("sv_maxclients"), Value: []byte("256")},
		wireq3.Var{Key: []byte("version"), Value: []byte("ioq3 1.36")})
	for i := len(status.Vars); i < wireq3.MaxVars-1; i++ {
		status.Vars = append(status.Vars, wireq3.Var{Key: fmt.Appendf(nil, "var%04d", i), Value: bytes.Repeat([]byte("x"), 32)})
	}
	for i := range wireq3.MaxPlayers {
		status.Players = append(status.Players, wireq3.Player{Score: i, Ping: 50, Name: fmt.Appendf(nil, "player %03d %s", i, strings.Repeat("y", 16))})
	}
	to, err := net.ResolveUDPAddr("udp", master)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileServer{addr: c.Conn.LocalAddr().String()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // heartbeats
		defer wg.Done()
		for {
			if _, err := c.Conn.WriteToUDP(wire.AppendHeartbeat(nil, "QuakeArena-1"), to); err != nil {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	go func() { // answers
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := c.Conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			d := buf[:n]
			var out []byte
			if ch, err := wire.DecodeGetInfo(d); err == nil {
				out = wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\256\clients\1\protocol\71\hostname\hostile\challenge\`+string(ch)))
			} else if rest, ok := bytes.CutPrefix(d, []byte("\xff\xff\xff\xffgetstatus ")); ok {
				s := status
				s.Vars = append(s.Vars[:len(s.Vars):len(s.Vars)], wireq3.Var{Key: []byte("challenge"), Value: bytes.TrimSpace(rest)})
				out, _ = s.AppendTo(nil)
				h.statuses.Add(1)
			}
			if out != nil {
				_, _ = c.Conn.WriteToUDPAddrPort(out, from)
			}
		}
	}()
	h.stop = func() {
		close(done)
		c.Conn.Close()
		wg.Wait()
	}
	return h
}

// listEntry is what these tests read of a server in the list.
type listEntry struct {
	NumPlayers int    `json:"numplayers"`
	Players    []any  `json:"players"`
	Version    string `json:"version"`
	Address    string `json:"address"`
	Truncated  bool   `json:"truncated"`
}

// listAll reads every page of the list at base, checking each answer's
// size against maxPage and each entry's against maxEntry.
func listAll(t *testing.T, base string, maxPage, maxEntry int) (all []listEntry, pages int) {
	t.Helper()
	for offset := 0; pages < 1000; pages++ {
		r := request(t, "GET", fmt.Sprintf("%s?limit=1000&offset=%d", base, offset))
		var p struct {
			Total     int
			Servers   []json.RawMessage
			Truncated bool
		}
		if r.status != 200 || len(r.body) > maxPage || json.Unmarshal([]byte(r.body), &p) != nil {
			t.Fatalf("offset %d: %d, %d bytes (at most %d)", offset, r.status, len(r.body), maxPage)
		}
		for _, e := range p.Servers {
			var s listEntry
			if len(e) > maxEntry || json.Unmarshal(e, &s) != nil {
				t.Fatalf("an entry of %d bytes (at most %d)", len(e), maxEntry)
			}
			all = append(all, s)
		}
		offset += len(p.Servers)
		if offset >= p.Total || len(p.Servers) == 0 {
			return all, pages + 1
		}
		if !p.Truncated {
			t.Fatalf("a page of %d of %d servers not marked truncated", len(p.Servers), p.Total)
		}
	}
	t.Fatal("paging does not end")
	return nil, 0
}

// Hostile game servers answering the largest status Quake 3 allows, round
// after round registering and leaving: every entry the list sends is cut
// to max_status_size and marked, every page within max_page_size; the
// list shows each server's status from its first answer on, through its
// refreshes, never its heartbeat's data (1 client, no version) again; and
// servers that left cost no memory: the heap after three rounds is what it
// was (the statuses of 150 such servers would be 30 MB kept whole).
func TestServerListBoundsWithHostileServers(t *testing.T) {
	const (
		perRound, rounds = 50, 3
		maxPage          = 64 << 10
		maxEntry         = 8 << 10 // max_status_size's default
	)
	udp, web := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	testcaddy.Start(t, gateConfig{UDP: udp, Protocols: "master {\n\texpiry 3s\n}", Web: web, Site: `handle_path /servers/* {
	server_list {
		ttl 1s
		max_page_size 64KiB
		max_queries 64
	}
}`}.String())
	base := "http://" + web + "/servers/"
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	for round := range rounds {
		var servers []*hostileServer
		for i := range perRound {
			servers = append(servers, startHostileServer(t, udp, fmt.Sprintf("127.%d.%d.%d", 100+round, i/200, i%200+1)))
		}
		live := func(all []listEntry) int {
			n := 0
			for _, s := range all {
				if s.NumPlayers == 256 {
					n++
				}
			}
			return n
		}
		testutil.WaitForWithin(t, 30*time.Second, "every hostile server's status", func() bool {
			all, _ := listAll(t, base, maxPage, maxEntry)
			return len(all) == perRound && live(all) == perRound
		})
		// Refreshed every ttl (1s): over three seconds, the list shows
		// every status throughout, each cut and marked.
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			all, pages := listAll(t, base, maxPage, maxEntry)
			for _, s := range all {
				if s.NumPlayers != 256 || s.Version == "" || !s.Truncated || len(s.Players) == 0 {
					t.Fatalf("round %d: %s listed with %d players, version %q, truncated %v: not its status", round, s.Address, s.NumPlayers, s.Version, s.Truncated)
				}
			}
			if pages < 2 {
				t.Fatalf("%d statuses in %d page of at most %d bytes", len(all), pages, maxPage)
			}
		}
		for _, s := range servers {
			s.stop()
		}
		testutil.WaitForWithin(t, 30*time.Second, "the servers to leave the list", func() bool {
			all, _ := listAll(t, base, maxPage, maxEntry)
			return len(all) == 0
		})
	}
	if grew := heap() - before; grew > 8<<20 {
		t.Fatalf("heap grew %d bytes over %d rounds of %d servers that left", grew, rounds, perRound)
	} else {
		t.Logf("heap grew %d bytes over %d rounds of %d servers that left", grew, rounds, perRound)
	}
}
