package tests

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	"github.com/gamegate/gamegate/wire/freeciv"
)

type freecivEnv struct {
	server string // the real Freeciv server
	gate   string // gamegate's layer4 route in front of it: matcher, guard, proxy
	bare   string // a route with the guard but no matcher
	http   string
	caddy  *testcaddy.Caddy
}

func startFreecivGate(t *testing.T) *freecivEnv {
	t.Helper()
	env := &freecivEnv{server: testutil.StartFreeciv(t), gate: testutil.FreeTCPAddr(t), bare: testutil.FreeTCPAddr(t)}
	env.http = "http://" + testutil.FreeTCPAddr(t)
	env.caddy = testcaddy.Start(t, fmt.Sprintf(`{
%s}
%s {
	handle_path /query/* {
		game_query {
			query_timeout 20s # only a failing test waits that long
			server civ %s freeciv {
				timeout 20s
			}
			commands civ join # it joins the game: opt in
		}
	}
}
`, freecivGuardRoutes(env.gate, env.bare, env.server), env.http, env.server))
	return env
}

// joinReq is a real client's first packet.
func joinReq(t *testing.T, capability string) []byte {
	t.Helper()
	r := freeciv.JoinReq{Username: []byte("tester"), Capability: []byte(capability), Major: 3, Minor: 0, Patch: 6}
	b, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readServer waits for the JOIN_REPLY, decodes everything the server sends
// after it until it has been quiet for idle, and returns the JOIN_REPLY, the
// number of packets, how many came from compressed chunks, and the bytes the
// splitter could not frame. Until the JOIN_REPLY has come, it waits for up
// to 30 s: a busy machine may take seconds to schedule the server.
func readServer(t *testing.T, c net.Conn, idle time.Duration) (reply *freeciv.JoinReply, packets, fromChunks, leftover int) {
	t.Helper()
	var s freeciv.Splitter
	s.SwitchOnJoin = true
	buf := make([]byte, 64<<10)
	limit := time.Now().Add(30 * time.Second) // a server that never goes quiet
	for {
		if time.Now().After(limit) {
			t.Fatalf("the server was still sending after 30 s")
		}
		deadline := limit
		if reply != nil {
			deadline = time.Now().Add(idle)
		}
		_ = c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			k, werr := s.Write(p)
			p = p[k:]
			for {
				f, err := s.Next()
				if errors.Is(err, freeciv.ErrNeedMore) {
					break
				}
				if err != nil {
					t.Fatalf("the server's traffic does not frame: %v", err)
				}
				packets++
				if f.FromChunk {
					fromChunks++
				}
				if f.Type == freeciv.PacketServerJoinReply && reply == nil {
					reply = new(freeciv.JoinReply)
					if err := reply.Decode(f.Packet); err != nil {
						t.Fatalf("JOIN_REPLY: %v", err)
					}
					// The decoded strings alias the splitter: keep copies.
					reply.Message, reply.Capability = bytes.Clone(reply.Message), bytes.Clone(reply.Capability)
				}
			}
			if werr != nil && k == 0 {
				t.Fatalf("splitter: %v", werr)
			}
		}
		if err != nil {
			return reply, packets, fromChunks, s.Buffered()
		}
	}
}

func TestFreecivThroughGuard(t *testing.T) {
	env := startFreecivGate(t)

	// A probe with a capability the server lacks: refused, with the
	// server's own capability string.
	c, err := net.Dial("tcp", env.gate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(joinReq(t, "+not-a-real-capability")); err != nil {
		t.Fatal(err)
	}
	reply, _, _, _ := readServer(t, c, 2*time.Second)
	c.Close()
	if reply == nil || reply.YouCanJoin || len(reply.Capability) == 0 {
		t.Fatalf("JOIN_REPLY to an incompatible client: got %+v", reply)
	}
	capability := string(reply.Capability)
	t.Logf("server refused the probe: %q; its capability: %q", reply.Message, capability)

	// With the server's own capability the client joins, and everything the
	// server then sends frames with wire/freeciv, compressed chunks included.
	c, err = net.Dial("tcp", env.gate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(joinReq(t, capability)); err != nil {
		t.Fatal(err)
	}
	reply, packets, fromChunks, leftover := readServer(t, c, 5*time.Second)
	if reply == nil || !reply.YouCanJoin {
		t.Fatalf("JOIN_REPLY with the server's capability: got %+v", reply)
	}
	if fromChunks == 0 || leftover != 0 || packets < 100 {
		t.Fatalf("after the join: %d packets, %d from compressed chunks, %d bytes left over; want many packets, some from chunks, none left over",
			packets, fromChunks, leftover)
	}
	t.Logf("joined through the guard: %q, then %d packets (%d from compressed chunks), 0 bytes left over", reply.Message, packets, fromChunks)
}

// hostile sends a stream and reports whether the gateway cut it off (the
// connection ends without any answer).
func hostile(t *testing.T, gate string, stream []byte) (answered int) {
	t.Helper()
	c, err := net.Dial("tcp", gate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write(stream) // the gateway may cut the connection mid-write
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was not closed within 5 s")
	}
	return int(n)
}

func TestFreecivGuardCutsOffHostileStreams(t *testing.T) {
	env := startFreecivGate(t)
	_, cases := hostileStreams(t)
	violations := func() float64 {
		f, _ := env.caddy.Metric(t, `gamegate_freeciv_guard_violations_total{reason="framing"}`)
		p, _ := env.caddy.Metric(t, `gamegate_freeciv_guard_violations_total{reason="first_packet"}`)
		return f + p
	}
	for name, stream := range cases {
		for route, addr := range map[string]string{"matcher and guard": env.gate, "guard alone": env.bare} {
			t.Run(name+" via "+route, func(t *testing.T) {
				before := violations()
				n := hostile(t, addr, stream)
				if name == "garbage after the header" && route == "matcher and guard" {
					// Not a plausible JOIN_REQ: the matcher refuses it and
					// caddy-l4 closes the connection before any handler.
					if n > 0 {
						t.Fatalf("the server answered %d bytes to a malformed JOIN_REQ", n)
					}
					return
				}
				if after := violations(); after != before+1 {
					t.Fatalf("guard violations: %v before, %v after; want one more (the guard, not the server, cut it off)", before, after)
				}
			})
		}
	}
	// The server keeps serving other clients.
	c, err := net.Dial("tcp", env.gate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(joinReq(t, "+not-a-real-capability"))
	if reply, _, _, _ := readServer(t, c, 2*time.Second); reply == nil || len(reply.Capability) == 0 {
		t.Fatalf("after the hostile clients, a new client got %+v", reply)
	}
}

func TestFreecivGameQuery(t *testing.T) {
	env := startFreecivGate(t)
	var st struct {
		Version  string `json:"version"`
		Protocol string `json:"protocol"`
		Raw      struct {
			Capability string `json:"capability"`
			CanJoin    bool   `json:"can_join"`
		} `json:"raw"`
	}
	version := testutil.FreecivVersion(t)
	if r := getJSON(t, env.http+"/query/civ", &st); r.status != 200 || st.Version != version || st.Protocol != "freeciv" ||
		!strings.HasPrefix(st.Raw.Capability, "+Freeciv-") {
		t.Fatalf("status of the real server (version %s): got %d %s", version, r.status, r.body)
	}
	// The server's network capability is the first of its capabilities: a
	// client offering it can join.
	network := strings.Fields(st.Raw.Capability)[0]
	var join struct {
		CanJoin    bool   `json:"can_join"`
		Message    string `json:"message"`
		Capability string `json:"capability"`
	}
	if r := getJSON(t, env.http+"/query/civ/join?arg="+url.QueryEscape(network), &join); r.status != 200 || !join.CanJoin || join.Capability == "" {
		t.Fatalf("join probe offering %q: got %d %s", network, r.status, r.body)
	}
	// A command freeciv does not declare read-only: refused by the gateway.
	if r := getJSON(t, env.http+"/query/civ/players", nil); r.status != 403 {
		t.Fatalf("command not allowed: got %d %s", r.status, r.body)
	}
	raw, _ := json.Marshal(st)
	t.Logf("game_query status of the real Freeciv server: %s", raw)
}

// The join command really joins a game whose server accepts the probe's
// capability, so game_query forwards it only to a server whose commands
// name it: by default it answers 403 and nothing reaches the server. A
// recording server stands in for Freeciv and shows what arrives.
func TestFreecivJoinIsOptIn(t *testing.T) {
	upstream, received := recordingServer(t)
	gate := startQueryGate(t, fmt.Sprintf(`
			server civ %[1]s freeciv {
				timeout 1s
			}
			server civ-join %[1]s freeciv {
				timeout 1s
			}
			commands civ-join join`, upstream))
	if r := getJSON(t, gate+"/query/civ/join", nil); r.status != 403 {
		t.Fatalf("join by default: got %d %s, want 403 without a query", r.status, r.body)
	}
	// Opted in, the probe is sent (and the recording server never
	// answers it).
	if r := getJSON(t, gate+"/query/civ-join/join", nil); r.status < 500 {
		t.Fatalf("join opted in: got %d %s, want the probe sent and left unanswered", r.status, r.body)
	}
	select {
	case b := <-received:
		if !bytes.Contains(b, []byte("+Freeciv-3.0-network")) {
			t.Fatalf("the server received %q, want the opted-in JOIN_REQ", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the opted-in join probe did not reach the server")
	}
	select {
	case b := <-received:
		t.Fatalf("a second connection reached the server: %q (the default configuration sent a join)", b)
	default:
	}
}

// The LAN announcement query against the real server, which announces to
// a loopback "group" so that the test stays on loopback.
func TestFreecivGameQueryLAN(t *testing.T) {
	server := testutil.StartFreecivAnnouncing(t, "127.0.0.1")
	base := "http://" + testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`%s {
	game_query {
		query_timeout 20s # only a failing test waits that long
		server civ %s freeciv {
			timeout 20s
			lan_group 127.0.0.1
			lan_wait 20s
		}
	}
}
`, base, server))
	var lan struct {
		Hostname string `json:"hostname"`
		Port     int    `json:"port"`
		Version  string `json:"version"`
		Status   string `json:"status"`
		Players  int    `json:"players"`
		Humans   int    `json:"humans"`
	}
	_, port, _ := net.SplitHostPort(server)
	version := testutil.FreecivVersion(t)
	if r := getJSON(t, base+"/civ/lan", &lan); r.status != 200 || lan.Version != version || fmt.Sprint(lan.Port) != port || lan.Hostname == "" || lan.Status == "" {
		t.Fatalf("LAN announcement: got %d %s", r.status, r.body)
	}
	var st struct {
		Name       string `json:"name"`
		NumPlayers int    `json:"numplayers"`
		Version    string `json:"version"`
		Raw        struct {
			LAN *struct {
				Status string `json:"status"`
			} `json:"lan"`
		} `json:"raw"`
	}
	if r := getJSON(t, base+"/civ", &st); r.status != 200 || st.Name != lan.Hostname || st.NumPlayers != lan.Players || st.Raw.LAN == nil || st.Version != version {
		t.Fatalf("status with the LAN announcement: got %d %s", r.status, r.body)
	}
	t.Logf("LAN announcement of the real server: %+v", lan)
}

// hostileStreams are streams a guard must cut off, each starting with (or
// being a corrupted) valid JOIN_REQ.
func hostileStreams(t *testing.T) (valid []byte, cases map[string][]byte) {
	t.Helper()
	valid = joinReq(t, "+Freeciv-3.0-network")
	// A compressed chunk whose packets decompress past max_decompressed_size
	// (64 KiB): 200 KiB of well-formed packets.
	var packets []byte
	for len(packets) < 200<<10 {
		packets, _ = freeciv.AppendPacket(packets, 1, 80, make([]byte, 1000))
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(packets)
	zw.Close()
	bomb := binary.BigEndian.AppendUint16(nil, uint16(freeciv.CompressionBorder+2+z.Len()))
	bomb = append(bomb, z.Bytes()...)

	badBody := bytes.Clone(valid)
	for i := 3; i < len(badBody); i++ {
		badBody[i] = 0xAA // a valid header, garbage after it: strings without NULs
	}
	cases = map[string][]byte{
		"oversized length":               append(bytes.Clone(valid), 0x3F, 0xFF, 0x05), // 16383-byte packet > 4096
		"chunk past the limit":           append(bytes.Clone(valid), bomb...),
		"garbage after the header":       badBody,
		"garbage after the first packet": append(bytes.Clone(valid), bytes.Repeat([]byte{0xFF}, 64)...),
	}
	return valid, cases
}

// recordingServer accepts TCP connections on loopback and hands over what
// each one received once it closes.
func recordingServer(t *testing.T) (addr string, got <-chan []byte) {
	t.Helper()
	ch := make(chan []byte, 16)
	addr = testutil.ServeTCP(t, func(c net.Conn) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		ch <- b
	})
	return addr, ch
}

// Nothing malformed reaches the server: behind the guard, a recording
// server receives at most the valid JOIN_REQ that starts a hostile stream,
// never the hostile bytes after it.
func TestFreecivGuardPassesNothingMalformed(t *testing.T) {
	upstream, received := recordingServer(t)
	gate, bare := testutil.FreeTCPAddr(t), testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf("{\n%s}\n", freecivGuardRoutes(gate, bare, upstream)))
	valid, cases := hostileStreams(t)
	// A well-formed stream passes unchanged, as a control.
	good := append(bytes.Clone(valid), 0x00, 0x04, 0x09, 0x01)
	for name, stream := range map[string][]byte{"a well-formed stream": good} {
		c, err := net.Dial("tcp", gate)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(stream)
		c.Close()
		select {
		case b := <-received:
			if !bytes.Equal(b, stream) {
				t.Fatalf("%s: the server received %x, want it unchanged", name, b)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing reached the server", name)
		}
	}
	for name, stream := range cases {
		for route, addr := range map[string]string{"matcher and guard": gate, "guard alone": bare} {
			hostile(t, addr, stream)
			select {
			case b := <-received:
				if !bytes.HasPrefix(valid, b) || len(b) > len(valid) {
					t.Fatalf("%s via %s: the server received %d bytes (%x…), more than the valid JOIN_REQ before the hostile part", name, route, len(b), b[:min(len(b), 16)])
				}
			case <-time.After(2 * time.Second):
				// The guard refused before the proxy dialled the server.
			}
		}
	}
}

// freecivGuardRoutes is a layer4 block with the Freeciv guard in front of
// upstream twice: on gate behind the freeciv matcher, and on bare without
// it.
func freecivGuardRoutes(gate, bare, upstream string) string {
	return fmt.Sprintf(`	layer4 {
		%s {
			@freeciv freeciv
			route @freeciv {
				freeciv_guard {
					max_decompressed_size 65536
				}
				proxy %s
			}
		}
		%s {
			route {
				freeciv_guard {
					max_decompressed_size 65536
				}
				proxy %s
			}
		}
	}
`, gate, upstream, bare, upstream)
}
