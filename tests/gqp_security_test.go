package tests

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// Draft GQP, written here from the draft (seed 003) and the project's
// reading of it, independently of wire/gqp: a query is command names with
// RS-led, US-separated arguments, joined by GS and closed by EOT, sent
// without padding.
const (
	draftEOT = 0x04
	draftSTX = 0x02
	draftACK = 0x06
	draftDC1 = 0x11
	draftDC2 = 0x12
	draftGS  = 0x1D
	draftRS  = 0x1E
	draftUS  = 0x1F
)

func draftQuery(commands ...[]string) []byte {
	var b []byte
	for i, c := range commands {
		if i > 0 {
			b = append(b, draftGS)
		}
		b = append(b, c[0]...)
		for j, a := range c[1:] {
			if j == 0 {
				b = append(b, draftRS)
			} else {
				b = append(b, draftUS)
			}
			b = append(b, a...)
		}
	}
	return append(b, draftEOT)
}

// draftReply is one command's answer: status, name, and its records as
// text ("name=value" for DC2, the string for DC1, the text after STX).
type draftReply struct {
	status  string
	name    string
	records []string
}

func parseDraftResponse(t *testing.T, b []byte) []draftReply {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != draftEOT {
		t.Fatalf("response %q does not end with EOT", b)
	}
	var out []draftReply
	for _, part := range bytes.Split(b[:len(b)-1], []byte{draftGS}) {
		if len(part) < 2 {
			t.Fatalf("reply %q has no status", part)
		}
		r := draftReply{status: string(part[:2])}
		fields := bytes.Split(part[2:], []byte{draftRS})
		r.name = string(fields[0])
		for _, f := range fields[1:] {
			switch {
			case len(f) == 1 && f[0] == draftACK:
			case len(f) > 0 && (f[0] == draftDC1 || f[0] == draftSTX):
				r.records = append(r.records, string(f[1:]))
			case len(f) > 0 && f[0] == draftDC2:
				name, value, _ := bytes.Cut(f[1:], []byte{draftUS})
				r.records = append(r.records, string(name)+"="+string(value))
			default:
				t.Fatalf("record %q is not one the draft defines", f)
			}
		}
		out = append(out, r)
	}
	return out
}

func draftAsk(t *testing.T, server string, q []byte) []draftReply {
	t.Helper()
	conn, err := net.Dial("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(q); err != nil {
		t.Fatal(err)
	}
	var resp []byte
	buf := make([]byte, 65536)
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	for len(resp) == 0 || resp[len(resp)-1] != draftEOT {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("query %q: %v after %d bytes", q, err, len(resp))
		}
		resp = append(resp, buf[:n]...)
	}
	return parseDraftResponse(t, resp)
}

// A client written from the draft, which knows nothing of padding, gets
// full answers on loopback (a trusted network by default).
func TestDraftGQPClientOnLoopback(t *testing.T) {
	env := startGameQuery(t, "", "")
	for _, tc := range []struct {
		name  string
		query []byte
		want  string
	}{
		{"identify", draftQuery([]string{"identify"}), "[{10 identify [gamename=ut gamever=432 netver=400]}]"},
		{"echo with several arguments", draftQuery([]string{"echo", "one", "two words", "three"}), "[{10 echo [one two words three]}]"},
		{"echo with one argument", draftQuery([]string{"echo", "this text"}), "[{10 echo [this text]}]"},
		{"unknown command", draftQuery([]string{"unknown command"}), "[{20 unknown command [unknown command]}]"},
		{"two commands", draftQuery([]string{"echo", "this text"}, []string{"echo", "more text"}), "[{10 echo [this text]} {10 echo [more text]}]"},
		{"identify and motd", draftQuery([]string{"identify"}, []string{"motd"}),
			"[{10 identify [gamename=ut gamever=432 netver=400]} {10 motd [message=welcome rules=no camping]}]"},
	} {
		if got := fmt.Sprint(draftAsk(t, env.gqpAddr, tc.query)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// startGQPResponder runs a GQP responder with options (Caddyfile lines) on
// a free loopback port, trusting only 127.0.0.2, so that other loopback
// addresses are held to the public rules; it returns the port's address.
func startGQPResponder(t *testing.T, options string) string {
	t.Helper()
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			@gqp gqp
			route @gqp {
				gqp {%s
					trusted_networks 127.0.0.2/32
				}
			}
		}
	}
}
`, addr, options))
	return addr
}

// Outside the trusted networks, an unpadded query still gets nothing larger
// than itself, while a padded one is answered.
func TestGQPResponderNoAmplificationBeyondTrusted(t *testing.T) {
	addr := startGQPResponder(t, `
					identify ut 432 400`)
	untrusted := testutil.DialUDP(t, "127.0.0.1:0", addr)
	untrusted.Send(draftQuery([]string{"identify"}))
	if b, ok := untrusted.Recv(300 * time.Millisecond); ok {
		t.Fatalf("untrusted source: an unpadded 9-byte query got %d bytes back", len(b))
	}
	trusted := testutil.DialUDP(t, "127.0.0.2:0", addr)
	trusted.Send(draftQuery([]string{"identify"}))
	if b, ok := trusted.Recv(3 * time.Second); !ok || !bytes.Contains(b, []byte("gamename")) {
		t.Fatalf("trusted source: got %q, want the identify answer", b)
	}
	padded := draftQuery([]string{"identify"}, []string{"pad", strings.Repeat(".", 100)})
	untrusted.Send(padded)
	if b, ok := untrusted.Recv(3 * time.Second); !ok || !bytes.Contains(b, []byte("gamename")) || len(b) > len(padded) {
		t.Fatalf("untrusted source, padded: got %q", b)
	}
}

// An HTTP client cannot reach GQP's challenge, validate or protected
// commands through game_query unless the server's allow-list names them.
func TestGameQueryForwardsOnlyAllowedCommands(t *testing.T) {
	env := startGameQuery(t, "", "")
	q := env.base + "/query/demo"
	for _, path := range []string{"/challenge?arg=admin&arg=hunter2", "/validate?arg=x", "/kick?arg=bob", "/motd"} {
		r := request(t, "GET", q+path)
		if r.status != 403 || strings.Contains(r.body, "protocol_status") || strings.Contains(r.body, "records") {
			t.Fatalf("%s: got %d %s, want the gateway's own 403", path, r.status, r.body)
		}
	}
	for _, path := range []string{"", "/identify", "/echo?arg=x", "/extensions", "/status"} {
		if r := request(t, "GET", q+path); r.status != 200 {
			t.Fatalf("%s (read-only): got %d %s", path, r.status, r.body)
		}
	}
}

// Requests with ever new arguments spend their own budget and cache: the
// status stays answered.
func TestGameQueryStatusSurvivesArgumentVariety(t *testing.T) {
	up := startCountingGQP(t, engineAnswer(t))
	httpAddr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`http://%s {
	game_query {
		server g %s
		rate_limit 0.01 2
		max_entries 8
	}
}`, httpAddr, up.addr))
	base := "http://" + httpAddr
	if r := request(t, "GET", base+"/g"); r.status != 200 {
		t.Fatalf("status: got %d %s", r.status, r.body)
	}
	codes := map[int]int{}
	for i := range 40 {
		codes[request(t, "GET", fmt.Sprintf("%s/g/echo?arg=%d", base, i)).status]++
	}
	if codes[503] == 0 {
		t.Fatalf("40 distinct arguments never reached the rate limit: %v", codes)
	}
	if r := request(t, "GET", base+"/g"); r.status != 200 {
		t.Fatalf("status after 40 distinct arguments: got %d %s, want 200", r.status, r.body)
	}
}

// One client cannot send ad-hoc queries at any rate.
func TestGameQueryAdHocPerClientRate(t *testing.T) {
	up := startCountingGQP(t, engineAnswer(t))
	httpAddr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`http://%s {
	game_query {
		ad_hoc gqp
		allow_targets 127.0.0.0/8
	}
}`, httpAddr))
	codes := map[int]int{}
	retryAfter := ""
	for range 30 {
		r := request(t, "GET", "http://"+httpAddr+"/"+up.addr)
		codes[r.status]++
		if r.status == 429 {
			retryAfter = r.header.Get("Retry-After")
		}
	}
	if codes[429] == 0 || retryAfter == "" || codes[200] == 0 {
		t.Fatalf("30 quick ad-hoc requests from one client: %v (Retry-After %q), want some 200 and some 429 with Retry-After", codes, retryAfter)
	}
}

// Errors reach clients in words: no socket errors, no internal detail.
func TestGameQueryErrorsInWords(t *testing.T) {
	closed := testutil.FreeUDPAddr(t) // nothing listens: the kernel refuses
	httpAddr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`http://%s {
	game_query {
		server down %s gqp {
			timeout 300ms
			retries -1
		}
	}
}`, httpAddr, closed))
	r := request(t, "GET", "http://"+httpAddr+"/down/identify")
	if r.status < 500 || strings.Contains(r.body, "connection refused") || strings.Contains(r.body, "udp") || strings.Contains(r.body, closed) ||
		!strings.Contains(r.body, `"type":"refused"`) {
		t.Fatalf("got %d %s, want an error of type refused in words", r.status, r.body)
	}
}

// Outside the trusted networks a challenge needs the cookie the responder
// gives the source's address and port. Failing challenges sent without it,
// or with made-up ones, by a sender that never reads the answers (as a
// spoofer of the victim's address cannot) lock nobody out; the real client,
// echoing its cookie, authenticates; and failures that do echo a cookie
// still lock their source out.
func TestGQPChallengeNeedsCookie(t *testing.T) {
	addr := startGQPResponder(t, `
					command secret {
						record word swordfish
						protected
					}
					login admin hunter2
					max_challenge_failures 2`)
	pad := []string{"pad", strings.Repeat(".", 200)}
	ask := func(c *testutil.UDPClient, cmd ...string) draftReply {
		t.Helper()
		q := draftQuery(cmd, pad)
		c.Send(q)
		b, ok := c.Recv(3 * time.Second)
		if !ok {
			t.Fatalf("%q: no answer", cmd)
		}
		return parseDraftResponse(t, b)[0]
	}
	cookie := func(c *testutil.UDPClient) string {
		t.Helper()
		r := ask(c, "challenge", "admin", "x")
		if r.status != "32" || len(r.records) != 1 || !strings.HasPrefix(r.records[0], "cookie=") {
			t.Fatalf("challenge without a cookie: got %+v, want 32 with cookie=…", r)
		}
		return strings.TrimPrefix(r.records[0], "cookie=")
	}

	// The failures a spoofer can send: no cookie, or one it made up. (A
	// spoofer would not see the answers; waiting for each only orders this
	// test.)
	forger := testutil.DialUDP(t, "127.0.0.3:0", addr)
	for i := range 20 {
		args := []string{"challenge", "admin", fmt.Sprint("guess", i)}
		if i%2 == 1 {
			args = append(args, strings.Repeat("ab", 12))
		}
		ask(forger, args...)
	}
	victim := testutil.DialUDP(t, "127.0.0.3:0", addr)
	token := ask(victim, "challenge", "admin", "hunter2", cookie(victim))
	if token.status != "10" || len(token.records) != 1 {
		t.Fatalf("the victim's challenge after 20 forged failures: got %+v, want 10 with a challenge string", token)
	}
	if r := ask(victim, "validate", token.records[0]); r.status != "10" {
		t.Fatalf("validate: got %+v", r)
	}
	if r := ask(victim, "secret"); r.status != "10" || fmt.Sprint(r.records) != "[word=swordfish]" {
		t.Fatalf("protected command after validation: got %+v", r)
	}

	// Real failures, with the cookie, still lock their source out.
	guesser := testutil.DialUDP(t, "127.0.0.4:0", addr)
	c := cookie(guesser)
	for range 2 {
		if r := ask(guesser, "challenge", "admin", "guess", c); r.status != "32" {
			t.Fatalf("wrong password with the cookie: got %+v, want 32", r)
		}
	}
	if r := ask(guesser, "challenge", "admin", "hunter2", c); r.status != "32" || len(r.records) != 1 || !strings.Contains(r.records[0], "too many") {
		t.Fatalf("right password after 2 failures: got %+v, want 32, locked out", r)
	}
}

// gqpExchange sends one unpadded query of a single command from c (its
// address and port stay the same across calls, as challenge/validate
// need) and decodes the answer.
func gqpExchange(t *testing.T, c *testutil.UDPClient, name string, args ...string) *wiregqp.Response {
	t.Helper()
	cmd := wiregqp.Command{Name: []byte(name)}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	q, err := (&wiregqp.Query{Commands: []wiregqp.Command{cmd}}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Send(q)
	b, ok := c.Recv(replyTimeout)
	if !ok {
		t.Fatalf("%s from %s: no answer", name, c.Conn.LocalAddr())
	}
	r := new(wiregqp.Response)
	if err := r.Decode(b); err != nil || len(r.Replies) != 1 {
		t.Fatalf("%s from %s: answer %q does not decode to one reply (%v)", name, c.Conn.LocalAddr(), b, err)
	}
	return r
}

// docs/security.md bounds the responder's pending challenges by max_sources.
// Challenges from 300 loopback addresses (the right password, so each would
// be kept) fill the table to the bound and no further: exactly the bound
// are issued, the rest answered 31. A client that asked before the flood
// still validates and runs a protected command. Both the layer4 handler and
// the gamegate UDP server's GQP protocol.
func TestGQPPendingChallengesBounded(t *testing.T) {
	const bound = 16
	const block = `gqp {
				identify bound-test 1.0 1
				command kick {
					record kicked yes
					protected
				}
				login admin {env.GAMEGATE_TEST_GQP_PASSWORD}
				max_sources 16
			}`
	t.Setenv("GAMEGATE_TEST_GQP_PASSWORD", "hunter2")
	for _, tc := range []struct{ name, config string }{
		{"layer4", `{
	layer4 {
		udp/%s {
			@gqp gqp
			route @gqp {
				` + strings.ReplaceAll(block, "\n", "\n\t") + `
			}
		}
	}
}
`},
		{"gamegate app", `{
	gamegate {
		udp %s {
			` + block + `
		}
	}
}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := testutil.FreeUDPAddr(t)
			testcaddy.Start(t, fmt.Sprintf(tc.config, addr))

			legit := testutil.DialUDP(t, "127.0.0.7:0", addr)
			ch := gqpExchange(t, legit, "challenge", "admin", "hunter2").Replies[0]
			if ch.Status != wiregqp.StatusOK || len(ch.Records) != 1 {
				t.Fatalf("challenge before the flood: got %v %q", ch.Status, ch.Text)
			}
			token := string(ch.Records[0].Value())

			issued, refused := 0, 0
			for i := range 300 {
				c := testutil.DialUDP(t, fmt.Sprintf("127.2.%d.%d:0", i/250, 1+i%250), addr)
				switch r := gqpExchange(t, c, "challenge", "admin", "hunter2").Replies[0]; r.Status {
				case wiregqp.StatusOK:
					issued++
				case wiregqp.StatusUnavailable:
					refused++
				default:
					t.Fatalf("challenge %d: got %v %q, want 10 or 31", i, r.Status, r.Text)
				}
				c.Conn.Close()
			}
			if issued != bound-1 || refused != 300-(bound-1) {
				t.Fatalf("300 challenges after one, bound %d: %d issued, %d refused; want %d issued (the table at its bound), %d refused",
					bound, issued, refused, bound-1, 300-(bound-1))
			}
			if r := gqpExchange(t, legit, "validate", token).Replies[0]; r.Status != wiregqp.StatusOK {
				t.Fatalf("validating the challenge given before the flood: got %v %q", r.Status, r.Text)
			}
			if r := gqpExchange(t, legit, "kick").Replies[0]; r.Status != wiregqp.StatusOK {
				t.Fatalf("protected command after validating: got %v %q", r.Status, r.Text)
			}
			// Validating took the client's challenge out of the table: one
			// more fits, and only one.
			other := testutil.DialUDP(t, "127.0.0.8:0", addr)
			if r := gqpExchange(t, other, "challenge", "admin", "hunter2").Replies[0]; r.Status != wiregqp.StatusOK {
				t.Fatalf("challenge after a validation freed a place: got %v %q", r.Status, r.Text)
			}
			if r := gqpExchange(t, other, "challenge", "admin", "hunter2").Replies[0]; r.Status != wiregqp.StatusUnavailable {
				t.Fatalf("challenge with the table full again: got %v %q, want 31", r.Status, r.Text)
			}
		})
	}
}
