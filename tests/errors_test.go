package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// errorAnswer is game_query's error body.
type errorAnswer struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Server string `json:"server"`
}

// resolvers returns the name servers of /etc/resolv.conf, whose addresses
// a lookup error names.
func resolvers(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// Errors of game_query say what happened with a stable type, and nothing
// internal: no address of the game server or of the resolver, no text of
// the operating system. A port that nothing listens on answers at once
// (refused: TCP's RST, UDP's ICMP port unreachable on the connected query
// socket), a silent one after the timeout; the detail goes to the log.
func TestGameQueryErrorTypes(t *testing.T) {
	tcpDown := testutil.FreeTCPAddr(t) // leased to this binary: nothing listens
	udpDown := testutil.FreeUDPAddr(t)
	udpSilent := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return nil }).String()
	tcpSilent := testutil.FreeTCPAddr(t)
	ln, err := net.Listen("tcp", tcpSilent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // accepts and never answers
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	// A refused port must not wait for this: a refusal that took the
	// timeout would be reported as a timeout, and fail below.
	const slow = "timeout 20s\n\t\t\t\tretries -1"
	httpAddr := testutil.FreeTCPAddr(t)
	c := testcaddy.StartLogged(t, fmt.Sprintf(`{
	admin off
}
http://%s {
	handle_path /query/* {
		game_query {
			server mc-down %s minecraft {
				timeout 20s
			}
			server a2s-down %s a2s {
				%s
			}
			server q3-down %s quake3 {
				%s
			}
			server gqp-down %s gqp {
				%s
			}
			server be-down %s bedrock {
				%s
			}
			server civ-down %s freeciv {
				timeout 20s
			}
			server a2s-silent %s a2s {
				timeout 300ms
				retries -1
			}
			server mc-silent %s minecraft {
				timeout 300ms
			}
			server a2s-nowhere nonexistent.invalid:27015 a2s
			server mc-nowhere nonexistent.invalid:25565 minecraft
			query_timeout 25s
			ad_hoc a2s {
				timeout 300ms
			}
			allow_targets 127.0.0.0/8
		}
	}
}
`, httpAddr, tcpDown, udpDown, slow, udpDown, slow, udpDown, slow, udpDown, slow, tcpDown,
		udpSilent, tcpSilent))
	base := "http://" + httpAddr + "/query/"

	leaks := []string{"127.0.0.1", "dial", "connect:", "connection refused", "lookup", "no such host",
		"i/o timeout", "read udp", "write udp", "tcp", "udp", "nonexistent.invalid"}
	for _, addr := range []string{tcpDown, udpDown, udpSilent, tcpSilent} {
		_, port, _ := net.SplitHostPort(addr)
		leaks = append(leaks, port)
	}
	leaks = append(leaks, resolvers(t)...)

	for _, tc := range []struct {
		path     string
		status   int
		typ      string
		quick    bool
		loggedAs string // what the log's detail must name
	}{
		{"mc-down", 502, "refused", true, tcpDown},
		{"a2s-down", 502, "refused", true, udpDown},
		{"q3-down", 502, "refused", true, udpDown},
		{"gqp-down", 502, "refused", true, udpDown},
		{"be-down", 502, "refused", true, udpDown},
		{"civ-down", 502, "refused", true, tcpDown},
		{"a2s-silent", 504, "timeout", false, udpSilent},
		{"mc-silent", 504, "timeout", false, tcpSilent},
		{"a2s-nowhere", 502, "unresolved", true, "nonexistent.invalid"},
		{"mc-nowhere", 502, "unresolved", true, "nonexistent.invalid"},
		{udpDown, 502, "refused", true, udpDown}, // ad hoc
	} {
		t.Run(tc.path, func(t *testing.T) {
			start := time.Now()
			r := request(t, "GET", base+tc.path)
			took := time.Since(start)
			var body errorAnswer
			if err := json.Unmarshal([]byte(r.body), &body); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			if r.status != tc.status || body.Error.Type != tc.typ || body.Error.Message == "" {
				t.Fatalf("got %d %s, want %d with error.type %q and a message", r.status, r.body, tc.status, tc.typ)
			}
			if tc.quick && took >= 20*time.Second {
				t.Fatalf("answered after %v: not at once (the query timeout is 20s)", took)
			}
			msg := strings.ToLower(body.Error.Message)
			if tc.path != udpDown { // an ad-hoc answer names the address the client asked
				msg = strings.ToLower(r.body)
			}
			for _, leak := range leaks {
				if strings.Contains(msg, strings.ToLower(leak)) {
					t.Fatalf("the answer %s carries %q", r.body, leak)
				}
			}
			if tc.path != udpDown && body.Server != tc.path {
				t.Fatalf("server: got %q, want %q", body.Server, tc.path)
			}
			t.Logf("%d in %v: %s", r.status, took.Round(time.Millisecond), r.body)
		})
	}

	// The detail, with the address, is in the log.
	logged := map[string]string{}
	for _, e := range c.Logs(t) {
		if e["msg"] == "game query failed" {
			s, _ := e["server"].(string)
			msg, _ := e["error"].(string)
			logged[s] = msg
		}
	}
	for server, want := range map[string]string{"mc-down": tcpDown + ": refused", "a2s-down": udpDown + ": refused",
		"a2s-silent": udpSilent, "a2s-nowhere": "no such host"} {
		if got := logged[server]; !strings.Contains(got, want) {
			t.Errorf("log of %s: got %q, want the detail naming %q", server, got, want)
		}
	}
}
