package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/caddymodule/caddyqos"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

const replyTimeout = 3 * time.Second

// unityRequest builds a request the way the shipped Unity client does:
// title "QoS request", sequence u8, identifier u16 LE, timestamp u64 LE.
func unityRequest(seq uint8, id uint16, ts uint64) []byte {
	b := []byte{0x59, 0x00, byte(len("QoS request") + 1)}
	b = append(b, "QoS request"...)
	b = append(b, seq)
	b = binary.LittleEndian.AppendUint16(b, id)
	return binary.LittleEndian.AppendUint64(b, ts)
}

func qosCaddyfile(addr, options string) string {
	block := ""
	if options != "" {
		block = " {\n\t\t\t\t\t" + options + "\n\t\t\t\t}"
	}
	return fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 2s
			@qos qos
			route @qos {
				qos%s
			}
		}
	}
}
`, addr, block)
}

// awaitProbe sends tagged probe requests (sequence numbers from 200 up)
// until one is answered, and returns every datagram received before that
// answer plus the answer itself. It gives up after 5 s.
func awaitProbe(t *testing.T, c *testutil.UDPClient, id uint16) (before [][]byte, answer []byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for seq := 200; time.Now().Before(deadline); seq++ {
		c.Send(unityRequest(uint8(seq), id, uint64(seq)))
		for {
			b, ok := c.Recv(100 * time.Millisecond)
			if !ok {
				break
			}
			if len(b) >= 3 && b[2] >= 200 {
				return before, b
			}
			before = append(before, b)
		}
	}
	t.Fatal("no probe was answered within 5 s")
	return nil, nil
}

func TestQoSEchoUnityLayout(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, qosCaddyfile(addr, "rate 1000\n\t\t\t\t\tburst 1000"))
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)

	id := uint16(rand.Uint32())
	reqs := make(map[uint8][]byte)
	for seq := range uint8(16) {
		req := unityRequest(seq, id, uint64(time.Now().UnixMilli()))
		reqs[seq] = req
		c.Send(req)
	}
	titleEnd := 3 + len("QoS request")
	for range 16 {
		resp, ok := c.Recv(replyTimeout)
		if !ok {
			t.Fatal("a request got no response")
		}
		if len(resp) < 13 || resp[0] != 0x95 || resp[1] != 0x00 {
			t.Fatalf("response %x: want at least 13 bytes starting 95 00", resp)
		}
		req, found := reqs[resp[2]]
		if !found {
			t.Fatalf("response %x echoes an unknown or repeated sequence", resp)
		}
		delete(reqs, resp[2])
		if !bytes.Equal(resp[2:], req[titleEnd:]) {
			t.Fatalf("response bytes after the version byte: got %x, want the request's bytes after the title %x", resp[2:], req[titleEnd:])
		}
	}
	if len(reqs) != 0 {
		t.Fatalf("%d requests got no response", len(reqs))
	}
}

func TestQoSEchoDropsMalformed(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	caddy := testcaddy.Start(t, qosCaddyfile(addr, "rate 1000\n\t\t\t\t\tburst 1000"))
	// Dropped mid-association, where the handler sees them; as a first
	// datagram the matcher refuses them before any handler does.
	wantDrops := map[string]float64{"title_length": 2, "magic": 1, "flow": 1, "too_long": 2}
	dropsBefore := map[string]float64{}
	for reason := range wantDrops {
		// A caddy-l4 route's QoS series appear with its first datagram.
		dropsBefore[reason], _ = caddy.Metric(t, `gamegate_qos_dropped_total{listener="`+addr+`",reason="`+reason+`"}`)
	}
	valid := unityRequest(1, 7, 42)
	bad := map[string][]byte{
		// The title length says 12 but only 5 bytes follow.
		"title length past the end": {0x59, 0x00, 0x0c, 'Q', 'o', 'S', 0xEE, 0xEE},
		// A title length of zero, which no title can have.
		"title length zero": {0x59, 0x00, 0x00, 0xEE, 0xEE},
		"wrong magic":       append([]byte{0x58}, valid[1:]...),
		"flow nibble set":   append([]byte{0x59, 0x04}, valid[2:]...),
		"1501 bytes":        append(bytes.Clone(valid), bytes.Repeat([]byte{0xEE}, 1501-len(valid))...),
		"3000 bytes":        append(bytes.Clone(valid), bytes.Repeat([]byte{0xEE}, 3000-len(valid))...),
	}
	for name, datagram := range bad {
		t.Run(name+" mid-association", func(t *testing.T) {
			c := testutil.DialUDP(t, "127.0.0.1:0", addr)
			c.Send(valid)
			if _, ok := c.Recv(replyTimeout); !ok {
				t.Fatal("the valid request opening the association got no response")
			}
			c.Send(datagram)
			before, _ := awaitProbe(t, c, 7)
			if len(before) != 0 {
				t.Fatalf("got %d datagrams in answer to the bad one (%x), want none", len(before), before[0])
			}
		})
		t.Run(name+" first datagram", func(t *testing.T) {
			c := testutil.DialUDP(t, "127.0.0.1:0", addr)
			c.Send(datagram)
			before, _ := awaitProbe(t, c, 7)
			if len(before) != 0 {
				t.Fatalf("got %d datagrams in answer to the bad one (%x), want none", len(before), before[0])
			}
		})
	}
	for reason, want := range wantDrops {
		if got := caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+addr+`",reason="`+reason+`"}`) - dropsBefore[reason]; got != want {
			t.Errorf("gamegate_qos_dropped_total{reason=%q} rose by %v, want %v", reason, got, want)
		}
	}
}

func TestQoSEchoRateLimitBan(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	caddy := testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 10s
			route {
				qos {
					rate 1
					burst 5
					ban_units 3
					ban_duration 1500ms
					name ratelimit-test
				}
			}
		}
	}
}
`, addr))
	bansBefore, _ := caddy.Metric(t, `gamegate_qos_bans_total{cause="rate",listener="`+addr+`"}`)
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	for seq := range uint8(6) {
		c.Send(unityRequest(seq, 9, uint64(seq)))
	}
	var flows []byte
	for range 6 {
		resp, ok := c.Recv(replyTimeout)
		if !ok {
			t.Fatalf("got %d responses, want 6 (5 in the burst, then the ban)", len(flows))
		}
		flows = append(flows, resp[1]&0xF)
	}
	want := []byte{0, 0, 0, 0, 0, 0b1010} // ban of 3 units: 1nnn with nnn = 2
	if !bytes.Equal(flows, want) {
		t.Fatalf("flow nibbles: got %v, want %v", flows, want)
	}
	// During the ban: silence, then answers once it ends.
	for seq := uint8(6); seq < 12; seq++ {
		c.Send(unityRequest(seq, 9, uint64(seq)))
	}
	before, answer := awaitProbe(t, c, 9)
	if len(before) != 0 {
		t.Fatalf("got %d responses during the ban (first %x), want none", len(before), before[0])
	}
	if answer[1] != 0 {
		t.Fatalf("first response after the ban: flow %#x, want none", answer[1])
	}
	if got := caddy.MustMetric(t, `gamegate_qos_bans_total{cause="rate",listener="`+addr+`"}`) - bansBefore; got != 1 {
		t.Fatalf("gamegate_qos_bans_total{cause=\"rate\"} rose by %v, want 1", got)
	}
}

func TestQoSTrackedSourcesBounded(t *testing.T) {
	for _, tc := range []struct {
		key     string
		sources int
		local   func(i int) string
	}{
		// Many source ports on one address.
		{"ip_port", 2000, func(int) string { return "127.0.0.1:0" }},
		// Many loopback addresses (all of 127.0.0.0/8 is local on Linux).
		{"ip", 600, func(i int) string { return fmt.Sprintf("127.0.%d.%d:0", 1+i/250, 1+i%250) }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			addr := testutil.FreeUDPAddr(t)
			caddy := testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 1s
			route {
				qos {
					max_sources 64
					source_key %s
					name flood-%s
				}
			}
		}
	}
}
`, addr, tc.key, tc.key))
			for i := range tc.sources {
				// A client asks again when a request goes unanswered, as
				// the Unity client does. One retry covers caddy-l4 handing
				// a datagram to an association that is ending (its idle
				// timeout fired while the kernel reused the source port).
				c := testutil.DialUDP(t, tc.local(i), addr)
				answered := false
				for attempt := 0; attempt < 2 && !answered; attempt++ {
					c.Send(unityRequest(uint8(i), uint16(i), uint64(i)))
					_, answered = c.Recv(replyTimeout)
				}
				if !answered {
					t.Fatalf("source %d of %d got no answer to two requests", i, tc.sources)
				}
				c.Conn.Close()
			}
			n := caddy.MustMetric(t, "gamegate_qos_tracked_sources")
			if n != 64 {
				t.Fatalf("gamegate_qos_tracked_sources after %d sources: got %v, want the bound, 64", tc.sources, n)
			}
			t.Logf("%d distinct sources, all answered; tracked sources: %v (bound 64)", tc.sources, n)
		})
	}
}

// A 3000-byte first datagram is longer than caddy-l4's 2 KiB matching chunk.
// The matcher must not spin on it: the next request is answered, and once the
// idle timeout passes no matcher or handler goroutine is left.
//
// Goroutine counts must not see what other tests leave behind (caddy-l4
// strands association goroutines when a server stops), so the test runs
// alone in a fresh process of the test binary.
func TestQoSOversizedFirstDatagramDoesNotSpin(t *testing.T) {
	if runIsolated(t) {
		return
	}
	matchFrame, handleFrame := funcName((*caddyqos.MatchQoS).Match), funcName((*caddyqos.QoSEcho).Handle)
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, qosCaddyfile(addr, ""))
	if n := goroutinesIn(matchFrame, handleFrame); n != 0 {
		t.Fatalf("QoS goroutines before any traffic: got %d, want 0", n)
	}
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	big := append(unityRequest(1, 5, 1), bytes.Repeat([]byte{0xEE}, 3000-24)...)
	for range 3 {
		c.Send(big)
	}
	before, _ := awaitProbe(t, c, 5)
	if len(before) != 0 {
		t.Fatalf("got %d datagrams in answer to 3000-byte ones, want none", len(before))
	}
	// The probe's association is live: its handler is waiting for more.
	if n := goroutinesIn(handleFrame); n < 1 {
		t.Fatalf("QoS handler goroutines while the probe's association is live: got %d, want at least 1", n)
	}
	// The association ends 2 s after the last datagram (idle_timeout); by
	// then no goroutine may be left in the matcher (one that looped on reads
	// would stay there, busy, for good) or in the handler.
	deadline := time.Now().Add(10 * time.Second)
	for goroutinesIn(matchFrame, handleFrame) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("QoS matcher or handler goroutines still running 10 s after the last datagram: %d", goroutinesIn(matchFrame, handleFrame))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// isolatedEnv names the test that a child process of the test binary runs.
const isolatedEnv = "GAMEGATE_ISOLATED_TEST"

// runIsolated runs the calling test alone in a child process of the test
// binary, fails if it fails there, and reports true: the caller returns.
// In that child process it reports false, and the test runs.
func runIsolated(t *testing.T) bool {
	t.Helper()
	if os.Getenv(isolatedEnv) == t.Name() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), isolatedEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s alone in a fresh process: %v\n%s", t.Name(), err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("%s alone in a fresh process did not report a pass:\n%s", t.Name(), out)
	}
	if testing.Verbose() {
		t.Logf("%s alone in a fresh process:\n%s", t.Name(), out)
	}
	return true
}

// funcName is the name a function's frames carry in a goroutine dump.
func funcName(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }

// goroutinesIn counts goroutines whose stack has any of the frames.
func goroutinesIn(frames ...string) int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		for _, f := range frames {
			if strings.Contains(g, f+"(") {
				n++
				break
			}
		}
	}
	return n
}

func TestQoSMatcherRoutesOtherTraffic(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 2s
			@qos qos
			route @qos {
				qos
			}
			route {
				echo
			}
		}
	}
}
`, addr))
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	c.Send([]byte("not a QoS request"))
	got, ok := c.Recv(replyTimeout)
	if !ok || string(got) != "not a QoS request" {
		t.Fatalf("other traffic: got %q (%v), want it echoed by the fallback route", got, ok)
	}
	q := testutil.DialUDP(t, "127.0.0.1:0", addr)
	q.Send(unityRequest(1, 2, 3))
	resp, ok := q.Recv(replyTimeout)
	var r wireqos.Response
	if !ok || r.Decode(resp) != nil {
		t.Fatalf("QoS request on a shared port: got %x (%v), want a QoS response", resp, ok)
	}
}

// A QoS ban stays in force across a configuration reload, in the layer4
// handler and in the gamegate UDP server alike: the source table is pooled
// under the handler's name (docs/handlers/qos.md: "survives configuration
// reloads"). The reload changes the rate, so it is a new configuration, not
// the same one again.
func TestQoSBanSurvivesReload(t *testing.T) {
	// name is the handler's name option; without one, the table is the
	// listener's own, kept across reloads all the same.
	layer4 := func(name string) func(addr string, rate, burst int) string {
		return func(addr string, rate, burst int) string {
			return fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 10s
			route {
				qos {
					rate %d
					burst %d
					ban_duration 10m
					%s
				}
			}
		}
	}
}
`, addr, rate, burst, name)
		}
	}
	app := func(name string) func(addr string, rate, burst int) string {
		return func(addr string, rate, burst int) string {
			return fmt.Sprintf(`{
	gamegate {
		udp %s {
			qos {
				rate %d
				burst %d
				ban_duration 10m
				%s
			}
		}
	}
}
`, addr, rate, burst, name)
		}
	}
	for _, tc := range []struct {
		name   string
		config func(addr string, rate, burst int) string
	}{
		{"layer4", layer4("name ban-reload-layer4")},
		{"gamegate app", app("name ban-reload-app")},
		{"layer4 listener's table", layer4("source_key ip")},
		{"gamegate app listener's table", app("source_key ip")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := testutil.FreeUDPAddr(t)
			caddy := testcaddy.Start(t, tc.config(addr, 1, 5))

			banned := testutil.DialUDP(t, "127.0.0.5:0", addr)
			for seq := range uint8(6) {
				banned.Send(unityRequest(seq, 3, uint64(seq)))
			}
			for i := range 6 {
				resp, ok := banned.Recv(replyTimeout)
				if !ok {
					t.Fatalf("got %d responses, want 6 (5 in the burst, then the ban)", i)
				}
				if ban := wireqos.FlowControl(resp[1] & 0xF).IsBan(); ban != (i == 5) {
					t.Fatalf("response %d: flow %#x, want a ban only on the 6th", i, resp[1]&0xF)
				}
			}

			caddy.Load(t, tc.config(addr, 2, 6))

			// The new configuration serves: a fresh source is answered.
			if !qosAnswered(testutil.DialUDP(t, "127.0.0.6:0", addr), 1, replyTimeout) {
				t.Fatal("a fresh source got no answer after the reload")
			}
			// The banned source is still ignored: its request is dropped
			// for the ban, and nothing comes back.
			dropped := caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+addr+`",reason="banned"}`)
			banned.Send(unityRequest(100, 3, 100))
			testutil.WaitFor(t, "the banned source's request to be dropped", func() bool {
				if b, ok := banned.Recv(time.Millisecond); ok {
					t.Fatalf("the banned source was answered after the reload: %x", b)
				}
				return caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+addr+`",reason="banned"}`) > dropped
			})
			if b, ok := banned.Recv(200 * time.Millisecond); ok {
				t.Fatalf("the banned source was answered after the reload: %x", b)
			}
		})
	}
}
