package unreal2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wireu2 "github.com/gamegate/gamegate/wire/unreal2"
)

func fixture(t *testing.T) *testutil.Unreal2Server {
	s := testutil.ExampleUnreal2()
	testutil.StartUnreal2(t, s)
	return s
}

func TestStatus(t *testing.T) {
	s := fixture(t)
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 5 * time.Second}, QuietTimeout: 50 * time.Millisecond}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(s.Addr, ":")
	if st.Name != "Gâte ☆ UT" || st.Map != s.Map || !st.Password || st.NumPlayers != 4 || st.MaxPlayers != 16 ||
		st.Connect != host+":7777" || st.Protocol != "unreal2" || st.Version != "" {
		t.Errorf("status: got %+v", st)
	}
	raw := fmt.Sprintln(st.Raw["mutators"], st.Raw["rules"], st.Raw["scoreboard"], st.Raw["ping"], st.Raw["flags"], st.Raw["skill"],
		st.Raw["gametype"], st.Raw["ip"], st.Raw["queryport"])
	raw = strings.TrimSpace(raw)
	want := "[MutInstaGib MutQuadJump] map[AdminName:Zoë GamePassword:True MaxSpectators:2,4 ServerMode:dedicated] map[Red Team Score:3] 0 65 Adept xDeathMatch  " + port
	if raw != want {
		t.Errorf("raw: got %s, want %s", raw, want)
	}
	var players, bots []string
	for _, p := range st.Players {
		players = append(players, fmt.Sprintf("%s:%v", p.Name, p.Raw))
	}
	for _, p := range st.Bots {
		bots = append(bots, p.Name)
	}
	if got := fmt.Sprint(players, bots); got != "[Alice:map[id:1 ping:40 score:12 statsId:9] Ünal:map[id:3 ping:70 score:-1 statsId:0]] [Zoë Sarge]" {
		t.Errorf("players, bots: got %s", got)
	}
}

// An answer past max_packets or max_response_size is refused as unusable,
// not gathered on.
func TestStatusBudget(t *testing.T) {
	flood := func(n, size int) string {
		return testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
			out := [][]byte{append([]byte{0x80, 0, 0, 0, 0}, make([]byte, 40)...)}
			for range n {
				out = append(out, append([]byte{0x80, 0, 0, 0, 1}, make([]byte, size)...))
			}
			return out
		}).String()
	}
	for _, c := range []struct {
		name string
		addr string
		want error
	}{{"packets", flood(10, 10), query.ErrTooManyPackets}, {"bytes", flood(3, 1000), query.ErrTooLarge}} {
		p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 5 * time.Second, Retries: -1}, Budget: query.Budget{MaxPackets: 5, MaxResponseSize: 1400}}
		_, err := p.Status(context.Background(), c.addr)
		if !errors.Is(err, c.want) || query.HTTPStatus(err) != http.StatusBadGateway {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// Without the server info, rules and players are no answer.
func TestStatusWantsInfo(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		return [][]byte{{0x80, 0, 0, 0, 1, 1, 0, 1, 0}, {0x80, 0, 0, 0, 9}}
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 100 * time.Millisecond, Retries: -1}}
	if _, err := p.Status(context.Background(), addr.String()); query.HTTPStatus(err) != http.StatusGatewayTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""},
		{Config{Budget: query.Budget{MaxPackets: 129}}, "max_packets"},
		{Config{Budget: query.Budget{MaxResponseSize: 1 << 21}}, "max_response_size"},
		{Config{QuietTimeout: duration.Duration(time.Minute)}, "quiet_timeout"},
		{Config{Attempts: query.Attempts{Retries: 11}}, "retries"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: got %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// A Killing Floor server (told by its KillingFloorMut mutator, as GameDig
// tells it) has the waves before its ping and a skill level after.
func TestStatusKillingFloor(t *testing.T) {
	le := func(b []byte, v uint32) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }
	str := func(b []byte, s string) []byte { return append(append(append(b, byte(len(s)+1)), s...), 0) }
	info := le(str(le([]byte{0x80, 0, 0, 0, 0}, 1), "10.0.0.1"), 7707)
	info = le(str(str(str(le(info, 7708), "KF"), "KF-Farm"), "KFGameType"), 2)
	info = str(le(le(le(le(le(info, 6), 3), 10), 30), 0), "Hard") // waves 3 of 10, ping 30, flags 0
	rules := str(str([]byte{0x80, 0, 0, 0, 1}, "Mutator"), "KillingFloorMut")
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		switch req[4] {
		case 0:
			return [][]byte{info}
		case 1:
			return [][]byte{rules}
		}
		return nil
	})
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 5 * time.Second}, QuietTimeout: 50 * time.Millisecond}
	st, err := p.Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%v %v %v %v %v %d %d", st.Raw["wavecurrent"], st.Raw["wavetotal"], st.Raw["ping"], st.Raw["skillLevel"], st.Raw["skill"], st.NumPlayers, st.MaxPlayers)
	if want := "3 10 30 Hard <nil> 2 6"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Rules of one key sent many times are joined as GameDig joins them, in
// time and memory linear in the answer: 4096 of 250 bytes each (the most
// a 1 MiB answer holds) make one value of 1 MB, not gigabytes of copies.
func TestRulesOfOneKeyJoinedOnce(t *testing.T) {
	value := strings.Repeat("v", 250)
	rules := make([]wireu2.Rule, wireu2.MaxRules)
	for i := range rules {
		rules[i] = wireu2.Rule{Key: wireu2.String{Len: 2, Raw: []byte("k")}, Value: wireu2.String{Len: 127, Raw: []byte(value)}}
	}
	rules[1].Key.Raw = []byte("other")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, raw := mapRules(rules)
	runtime.ReadMemStats(&after)
	if got := raw["k"].(string); len(got) != (len(rules)-1)*(len(value)+1)-1 || raw["other"] != value {
		t.Fatalf("got %d bytes under k, %q under other", len(got), raw["other"])
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("mapping %d rules allocated %d MB, want at most 16", len(rules), got>>20)
	}
}
