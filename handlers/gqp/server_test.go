package gqp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// bigServer has a protected command and a command whose answer is about
// 40 KB, the amplification an attacker wants.
func bigServer(t *testing.T, clock *testutil.Clock) *Server {
	t.Helper()
	big := strings.Repeat("x", 1000)
	s, err := NewServer(ServerConfig{
		Logins: map[string]string{"admin": "hunter2"},
		Now:    clock.Now,
		Commands: []Command{
			{Name: "big", Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
				for range 40 {
					r.AddString([]byte(big))
				}
				return wiregqp.StatusOK
			}},
			{Name: "some", Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
				for range 5 {
					r.AddString([]byte(big))
				}
				return wiregqp.StatusOK
			}},
			{Name: "kick", Protected: true, Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
				r.AddString([]byte("kicked"))
				return wiregqp.StatusOK
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// padded is the query of names, padded to 200 bytes so that short answers
// fit an unvalidated source's limit.
func padded(t *testing.T, names ...string) []byte {
	t.Helper()
	return paddedBy(t, 200, names...)
}

// paddedBy is the query of names with a pad command of n bytes.
func paddedBy(t *testing.T, n int, names ...string) []byte {
	t.Helper()
	b, err := mkQuery(append(names, "pad "+strings.Repeat(".", n))...).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answer asks s from src and returns the bytes sent back and the decoded
// response (nil when nothing came back).
func answer(t *testing.T, s *Server, src string, q []byte) (int, *wiregqp.Response) {
	t.Helper()
	out, _ := s.Answer(context.Background(), netip.MustParseAddrPort(src), q)
	if len(out) == 0 {
		return 0, nil
	}
	var whole []byte
	for _, d := range out {
		whole = append(whole, d...)
	}
	r := new(wiregqp.Response)
	if err := r.Decode(whole); err != nil {
		t.Fatalf("answer to %s does not decode: %v", src, err)
	}
	return len(whole), r
}

// cookieOf is the cookie s gives src, asked as a client does: a challenge
// without one.
func cookieOf(t *testing.T, s *Server, src string) string {
	t.Helper()
	_, r := answer(t, s, src, padded(t, "challenge admin,x"))
	if r == nil || r.Replies[0].Status != wiregqp.StatusUnauthorised || len(r.Replies[0].Records) != 1 || string(r.Replies[0].Records[0].Label) != "cookie" {
		t.Fatalf("challenge without a cookie from %s: got %+v, want 32 with the cookie", src, r)
	}
	return string(r.Replies[0].Records[0].Value())
}

// challengeFrom sends challenge admin,password from src with the cookie
// src was given, and returns the reply (nil when none came back).
func challengeFrom(t *testing.T, s *Server, src, password string) *wiregqp.Reply {
	t.Helper()
	_, r := answer(t, s, src, padded(t, "challenge admin,"+password+","+cookieOf(t, s, src)))
	if r == nil {
		return nil
	}
	return &r.Replies[0]
}

func validateFrom(t *testing.T, s *Server, src string) {
	t.Helper()
	r := challengeFrom(t, s, src, "hunter2")
	if r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("challenge from %s: got %+v", src, r)
	}
	token := string(r.Records[0].Value())
	if _, r := answer(t, s, src, padded(t, "validate "+token)); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("validate from %s: got %+v", src, r)
	}
}

// A source that validated from one port: a spoofed datagram with its
// address but another port neither runs protected commands nor gets an
// amplified answer, and the validated port itself gets a bounded answer.
func TestValidationIsBoundToAddressAndPort(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock)
	validateFrom(t, s, "192.0.2.1:4000")

	tiny := []byte("big\x04")
	if n, _ := answer(t, s, "192.0.2.1:4001", tiny); n > len(tiny) {
		t.Fatalf("spoofed address, other port: a %d-byte query got %d bytes back", len(tiny), n)
	}
	if _, r := answer(t, s, "192.0.2.1:4001", padded(t, "kick")); r == nil || r.Replies[0].Status != wiregqp.StatusUnauthorised {
		t.Fatalf("spoofed address, other port, protected command: got %+v, want 32", r)
	}
	if _, r := answer(t, s, "192.0.2.1:4000", padded(t, "kick")); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("the validated port, protected command: got %+v, want 10", r)
	}
	// The validated port itself: at most 10 times its query.
	if n, r := answer(t, s, "192.0.2.1:4000", tiny); n > 10*len(tiny) {
		t.Fatalf("validated source: a %d-byte query got %d bytes back, want at most %d", len(tiny), n, 10*len(tiny))
	} else if r != nil && r.Replies[0].Status != wiregqp.StatusUnavailable {
		t.Fatalf("validated source, answer too large: got %v, want 31 or nothing", r.Replies[0].Status)
	}
	q := padded(t, "some") // 5 KB of answer for 220 bytes
	q = append(q[:len(q)-1], append([]byte(strings.Repeat(".", 400)), 0x04)...)
	if n, r := answer(t, s, "192.0.2.1:4000", q); r == nil || r.Replies[0].Status != wiregqp.StatusOK || n > 10*len(q) {
		t.Fatalf("validated source, padded: got %d bytes for a %d-byte query", n, len(q))
	}
	// Authorisation expires.
	clock.Advance(11 * time.Minute)
	if _, r := answer(t, s, "192.0.2.1:4000", padded(t, "kick")); r == nil || r.Replies[0].Status != wiregqp.StatusUnauthorised {
		t.Fatalf("after auth_ttl: got %+v, want 32", r)
	}
}

func TestChallengeLockout(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock)
	status := func(src, pw string) wiregqp.Status {
		t.Helper()
		r := challengeFrom(t, s, src, pw)
		if r == nil {
			t.Fatalf("challenge from %s: no answer", src)
		}
		return r.Status
	}
	// Five wrong passwords, each from another port of the same address.
	for port := range 5 {
		if st := status("192.0.2.7:"+string(rune('1'+port))+"000", "guess"); st != wiregqp.StatusUnauthorised {
			t.Fatalf("wrong password: got %v", st)
		}
	}
	if st := status("192.0.2.7:9000", "hunter2"); st != wiregqp.StatusUnauthorised {
		t.Fatalf("the right password after 5 failures: got %v, want 32 (locked out)", st)
	}
	if st := status("[2001:db8::1]:1", "hunter2"); st != wiregqp.StatusOK {
		t.Fatalf("another source: got %v, want 10", st)
	}
	// An IPv6 source is counted by its /64.
	for i := range 5 {
		status("[2001:db8:1::"+string(rune('a'+i))+"]:1", "guess")
	}
	if st := status("[2001:db8:1::ff]:1", "hunter2"); st != wiregqp.StatusUnauthorised {
		t.Fatalf("same /64 after 5 failures: got %v, want 32", st)
	}
	clock.Advance(10 * time.Minute)
	if st := status("192.0.2.7:9000", "hunter2"); st != wiregqp.StatusOK {
		t.Fatalf("after the lockout: got %v, want 10", st)
	}
}

// Failures from many sources (each receiving its cookie): the table stays
// bounded, and sources it cannot count are refused rather than allowed
// uncounted guesses.
func TestChallengeFailureTableBounded(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, MaxAuthorized: 16, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), 1)
		challengeFrom(t, s, src.String(), "guess")
	}
	s.mu.Lock()
	n := len(s.failed.sources)
	s.mu.Unlock()
	if n > 16 {
		t.Fatalf("failure table holds %d sources, want at most 16", n)
	}
	if r := challengeFrom(t, s, "192.0.2.50:1", "hunter2"); r == nil || r.Status != wiregqp.StatusUnavailable {
		t.Fatalf("uncountable source with the table full: got %+v, want 31", r)
	}
	if _, r := answer(t, s, "127.0.0.1:1", padded(t, "challenge admin,hunter2")); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("trusted source with the table full: got %+v, want 10", r)
	}
	clock.Advance(10 * time.Minute)
	if r := challengeFrom(t, s, "192.0.2.50:1", "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("after the failures expire: got %+v, want 10", r)
	}
}

// One holder of an ordinary IPv6 /48 (65,536 /64s) fails challenges from
// real addresses (each receives its cookie) in more /64s than the failure
// table holds. It gets no more than its network's share of the table:
// further /64s of the /48 are refused (31), while an admin in any other
// network still authenticates. The same holds for an IPv4 /24.
func TestOneNetworkCannotTakeTheFailureTable(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock) // the default bound: 10000 failing sources
	attacker := netip.MustParseAddr("2001:db8:aa::").As16()
	from := func(i int) string {
		a := attacker
		a[6], a[7], a[15] = byte(i>>8), byte(i), 1 // the /64 i of the /48
		return netip.AddrPortFrom(netip.AddrFrom16(a), 27000).String()
	}
	refused := 0
	const tries = 10_001 // one more /64 than the table holds
	for i := range tries {
		r := challengeFrom(t, s, from(i), "guess")
		switch {
		case r == nil:
			t.Fatalf("challenge from %s: no answer", from(i))
		case r.Status == wiregqp.StatusUnavailable:
			refused++
		case r.Status != wiregqp.StatusUnauthorised:
			t.Fatalf("a wrong password from %s: got %v, want 32 or 31", from(i), r.Status)
		}
	}
	for _, admin := range []string{"[2001:db8:bb::7]:27000", "198.51.100.7:27000"} {
		if r := challengeFrom(t, s, admin, "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
			t.Fatalf("an admin in another network (%s) after the /48's failures: got %+v, want 10", admin, r)
		}
	}
	s.mu.Lock()
	held, networks := len(s.failed.sources), len(s.failed.networks)
	s.mu.Unlock()
	if held != FailingPerNetwork || networks != 1 || refused != tries-FailingPerNetwork {
		t.Fatalf("failures from %d /64s of one /48: the table holds %d sources of %d networks and %d were refused, want %d of 1 and %d",
			tries, held, networks, refused, FailingPerNetwork, tries-FailingPerNetwork)
	}
	// The /48's own /64s that failed are counted as before, and its share
	// comes back as its failures expire.
	for range 4 {
		challengeFrom(t, s, from(0), "guess")
	}
	if r := challengeFrom(t, s, from(0), "hunter2"); r == nil || r.Status != wiregqp.StatusUnauthorised {
		t.Fatalf("a /64 of the /48 after 5 failures: got %+v, want 32 (locked out)", r)
	}
	clock.Advance(10 * time.Minute)
	if r := challengeFrom(t, s, from(tries), "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("a new /64 of the /48 once its failures expired: got %+v, want 10", r)
	}

	// An IPv4 /24 against a small table: its share is half the table at
	// most, and another allocation still authenticates. In a table under
	// 16 shares of 16, an allocation's share is a network's: the /24 takes
	// its /16's.
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, MaxAuthorized: 8, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 256 {
		challengeFrom(t, s, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 1).String(), "guess")
	}
	s.mu.Lock()
	held = len(s.failed.sources)
	s.mu.Unlock()
	if held != 4 {
		t.Fatalf("failures from a whole /24 in a table of 8: it holds %d, want 4 (half)", held)
	}
	if r := challengeFrom(t, s, "203.0.114.1:1", "hunter2"); r == nil || r.Status != wiregqp.StatusUnavailable {
		t.Fatalf("a new source in the next /24 of the /16: got %+v, want 31", r)
	}
	if r := challengeFrom(t, s, "198.51.100.7:1", "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("an admin in another /16: got %+v, want 10", r)
	}
}

// One provider's allocation (an IPv6 /32: 65,536 /48s) fails challenges
// from real addresses, 16 /64s in each of more /48s than it takes to fill
// the failure table. It gets no more than its allocation's share of the
// table: further /48s of it are refused (31), while admins in other
// allocations still authenticate. Filling the table takes failing sources
// in AllocationShares allocations; then new sources outside the trusted
// networks are refused, and trusted ones are not. An IPv4 /16 is one
// allocation too.
func TestOneAllocationCannotTakeTheFailureTable(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock) // the default bound: 10000 failing sources
	const share = 10000 / AllocationShares
	// from is the /64 h of the /48 n of the /32 alloc of 2001:db8::/16
	// (documentation space and its neighbours: nothing here leaves the
	// process).
	from := func(alloc, n, h int) string {
		a := netip.MustParseAddr("2001:db8::").As16()
		a[2], a[3] = byte(alloc>>8), byte(alloc)
		a[4], a[5] = byte(n>>8), byte(n)
		a[7], a[15] = byte(h), 1
		return netip.AddrPortFrom(netip.AddrFrom16(a), 27000).String()
	}
	const alloc = 0x0db8
	refused := 0
	for n := range 10000 / FailingPerNetwork { // enough /48s to fill the table
		for h := range FailingPerNetwork {
			r := challengeFrom(t, s, from(alloc, n, h), "guess")
			switch {
			case r == nil:
				t.Fatalf("challenge from %s: no answer", from(alloc, n, h))
			case r.Status == wiregqp.StatusUnavailable:
				refused++
			case r.Status != wiregqp.StatusUnauthorised:
				t.Fatalf("a wrong password from %s: got %v, want 32 or 31", from(alloc, n, h), r.Status)
			}
		}
	}
	for _, admin := range []string{"198.51.100.7:27000", "[2001:db9::7]:27000"} {
		if r := challengeFrom(t, s, admin, "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
			t.Fatalf("an admin in another allocation (%s) after one /32's failures: got %+v, want 10", admin, r)
		}
	}
	if r := challengeFrom(t, s, from(alloc, 0xffff, 0), "hunter2"); r == nil || r.Status != wiregqp.StatusUnavailable {
		t.Fatalf("a new /48 of the /32 holding its share: got %+v, want 31", r)
	}
	s.mu.Lock()
	held, allocations := len(s.failed.sources), len(s.failed.allocations)
	s.mu.Unlock()
	if held != share || allocations != 1 || refused != 10000-share {
		t.Fatalf("failures from 10000 /64s of one /32: the table holds %d sources of %d allocations and %d were refused, want %d of 1 and %d",
			held, allocations, refused, share, 10000-share)
	}

	// Fill the rest of the table with the shares of other /32s.
	for a := 1; a < AllocationShares; a++ {
		for i := range share {
			if r := challengeFrom(t, s, from(alloc+a, i/FailingPerNetwork, i%FailingPerNetwork), "guess"); r == nil || r.Status != wiregqp.StatusUnauthorised {
				t.Fatalf("a wrong password from the /32 %d, source %d: got %+v, want 32", a, i, r)
			}
		}
	}
	s.mu.Lock()
	held, networks, allocations := len(s.failed.sources), len(s.failed.networks), len(s.failed.allocations)
	s.mu.Unlock()
	if held != 10000 || allocations != AllocationShares || networks > held {
		t.Fatalf("after %d /32s' shares: the table holds %d sources of %d networks and %d allocations, want 10000 of at most 10000 and %d",
			AllocationShares, held, networks, allocations, AllocationShares)
	}
	if r := challengeFrom(t, s, "198.51.100.7:27001", "hunter2"); r == nil || r.Status != wiregqp.StatusUnavailable {
		t.Fatalf("a new source once %d allocations fill the table: got %+v, want 31", AllocationShares, r)
	}
	if _, r := answer(t, s, "127.0.0.1:1", padded(t, "challenge admin,hunter2")); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("a trusted source with the table full: got %+v, want 10", r)
	}

	// An IPv4 /16: 1000 sources in 63 of its /24s; a table of 1000 gives
	// the /16 at most 62 (1000/16) of them.
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, MaxAuthorized: 1000, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		challengeFrom(t, s, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i / 16), byte(i % 16)}), 1).String(), "guess")
	}
	s.mu.Lock()
	held = len(s.failed.sources)
	s.mu.Unlock()
	if held != 1000/AllocationShares {
		t.Fatalf("failures from 1000 sources of one /16 in a table of 1000: it holds %d, want %d", held, 1000/AllocationShares)
	}
	if r := challengeFrom(t, s, "10.2.0.1:1", "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("an admin in the next /16: got %+v, want 10", r)
	}
}

// ClientIPv6Prefix sets which IPv6 addresses are one source: with /56,
// failures from different /64s of one /56 add up.
func TestChallengeLockoutClientIPv6Prefix(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, ClientIPv6Prefix: 56, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		challengeFrom(t, s, fmt.Sprintf("[2001:db8:1:%x::1]:1", i), "guess")
	}
	if r := challengeFrom(t, s, "[2001:db8:1:ff::1]:1", "hunter2"); r == nil || r.Status != wiregqp.StatusUnauthorised {
		t.Fatalf("another /64 of the /56 after 5 failures in it: got %+v, want 32 (locked out)", r)
	}
	if r := challengeFrom(t, s, "[2001:db8:1:100::1]:1", "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("the next /56: got %+v, want 10", r)
	}
	for _, bits := range []int{31, 129, -1} {
		if _, err := NewServer(ServerConfig{ClientIPv6Prefix: bits}); err == nil {
			t.Errorf("ClientIPv6Prefix %d: accepted, want an error", bits)
		}
	}
}

// A spoofer sends failing challenges with a victim's address (its very
// port, and others), without a cookie, with made-up cookies and with the
// cookies of the spoofer's own address: none counts, and the victim, which
// receives its own cookie, still authenticates.
func TestForgedChallengeFailuresCannotLockOut(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock)
	const victim = "192.0.2.80:27000"
	own := cookieOf(t, s, "203.0.113.66:27000") // the spoofer's own, real address
	for i := range 50 {
		for _, src := range []string{victim, "192.0.2.80:" + strconv.Itoa(1000+i)} {
			for _, q := range []string{
				"challenge admin,guess",
				"challenge admin,guess," + strings.Repeat("0", 2*cookieBytes),
				"challenge admin,guess," + own,
				"challenge admin,guess,short",
			} {
				n, r := answer(t, s, src, padded(t, q))
				if r == nil || r.Replies[0].Status != wiregqp.StatusUnauthorised || len(r.Replies[0].Records) != 1 {
					t.Fatalf("forged %q from %s: got %+v, want 32 with a cookie", q, src, r)
				}
				if n > len(padded(t, q)) {
					t.Fatalf("forged %q from %s: %d bytes back, more than the query", q, src, n)
				}
			}
		}
	}
	s.mu.Lock()
	n := len(s.failed.sources)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sources have failures counted after forged challenges only, want 0", n)
	}
	if r := challengeFrom(t, s, victim, "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("the victim after 400 forged failures: got %+v, want 10", r)
	}
	// The cookie is the victim's for a minute or two, then no longer.
	cookie := cookieOf(t, s, victim)
	clock.Advance(cookieEpoch)
	if r := challengeFrom(t, s, victim, "hunter2"); r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("a fresh cookie a minute on: got %+v, want 10", r)
	}
	if _, r := answer(t, s, victim, padded(t, "challenge admin,hunter2,"+cookie)); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("last epoch's cookie: got %+v, want 10", r)
	}
	clock.Advance(cookieEpoch)
	if _, r := answer(t, s, victim, padded(t, "challenge admin,hunter2,"+cookie)); r == nil || len(r.Replies[0].Records) != 1 || string(r.Replies[0].Records[0].Label) != "cookie" {
		t.Fatalf("a cookie two epochs old: got %+v, want 32 with a new cookie", r)
	}
}

// Trusted sources (loopback by default), which cannot be forged from
// outside, follow the draft: challenge without a cookie, failures counted.
func TestTrustedSourcesNeedNoCookie(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock)
	st := func(pw string) wiregqp.Status {
		t.Helper()
		_, r := answer(t, s, "127.0.0.1:5000", []byte("challenge\x1eadmin\x1f"+pw+"\x04"))
		if r == nil {
			t.Fatal("no answer to a trusted source")
		}
		return r.Replies[0].Status
	}
	if got := st("hunter2"); got != wiregqp.StatusOK {
		t.Fatalf("right password, no cookie: got %v, want 10", got)
	}
	for range 5 {
		st("guess")
	}
	if got := st("hunter2"); got != wiregqp.StatusUnauthorised {
		t.Fatalf("after 5 failures from a trusted source: got %v, want 32 (locked out)", got)
	}
}

// Challenges asked from many loopback sources (trusted, so without a
// cookie; with the right password) fill the pending table only to its bound: past it, challenge
// answers 31 and the table does not grow. A challenge given before the
// flood still validates, and once the flood's challenges expire a new
// client gets one again.
func TestPendingChallengesBounded(t *testing.T) {
	const bound = 16
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, MaxAuthorized: bound, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	pending := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.challenges)
	}
	const legit = "192.0.2.1:4000"
	r := challengeFrom(t, s, legit, "hunter2")
	if r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("challenge before the flood: got %+v", r)
	}
	token := string(r.Records[0].Value())

	issued := 0
	for i := range 1000 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)}), 9)
		_, r := answer(t, s, src.String(), padded(t, "challenge admin,hunter2"))
		switch {
		case r == nil:
			t.Fatalf("challenge from %s: no answer", src)
		case r.Replies[0].Status == wiregqp.StatusOK:
			issued++
		case r.Replies[0].Status != wiregqp.StatusUnavailable:
			t.Fatalf("challenge from %s with the table full: got %v, want 31", src, r.Replies[0].Status)
		}
	}
	if issued != bound-1 || pending() != bound {
		t.Fatalf("1000 challenges after one: %d issued, %d pending, want %d issued and the bound, %d, pending", issued, pending(), bound-1, bound)
	}
	if _, r := answer(t, s, legit, padded(t, "validate "+token)); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("validating the challenge given before the flood: got %+v, want 10", r)
	}
	if !s.Authorized(netip.MustParseAddrPort(legit)) {
		t.Fatal("the client is not authorised after validating")
	}
	// The flood's challenges expire (1 minute): a new client gets one.
	clock.Advance(time.Minute)
	validateFrom(t, s, "192.0.2.2:4000")
	if n := pending(); n != 0 {
		t.Fatalf("pending challenges after they expired: %d, want 0", n)
	}
}

// Trusted networks (loopback by default) get full answers to unpadded
// queries; everyone else still gets at most the query's size.
func TestTrustedNetworksGetFullAnswers(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := bigServer(t, clock)
	tiny := []byte("big\x04")
	if n, r := answer(t, s, "127.0.0.5:1", tiny); r == nil || len(r.Replies[0].Records) != 40 {
		t.Fatalf("loopback: got %d bytes, want the full answer", n)
	}
	if n, r := answer(t, s, "[::1]:1", tiny); r == nil || len(r.Replies[0].Records) != 40 {
		t.Fatalf("::1: got %d bytes, want the full answer", n)
	}
	if n, _ := answer(t, s, "192.0.2.9:1", tiny); n > len(tiny) {
		t.Fatalf("untrusted: got %d bytes for a %d-byte query", n, len(tiny))
	}
	none, err := NewServer(ServerConfig{Trusted: []netip.Prefix{}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := answer(t, none, "127.0.0.1:1", []byte("identify\x04")); n > 9 {
		t.Fatalf("no trusted networks: loopback got %d bytes", n)
	}
}

// Distinct arguments spend their own budget: the argument-free answer is
// still fetched.
func TestHTTPCommandArgumentsCannotStarvePlain(t *testing.T) {
	var requests atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"ok": true}`))
	}))
	defer up.Close()
	hc := &HTTPCommand{URL: up.URL, TTL: time.Nanosecond, Rate: 0.001, Burst: 2, Client: up.Client()}
	run := func(args ...string) wiregqp.Status {
		var resp wiregqp.Response
		var a [][]byte
		for _, x := range args {
			a = append(a, []byte(x))
		}
		return hc.Run(context.Background(), a, resp.Add(wiregqp.StatusOK, []byte("status")))
	}
	if st := run(); st != wiregqp.StatusOK {
		t.Fatalf("no arguments: got %v", st)
	}
	busy := 0
	for i := range 50 {
		if run(strconv.Itoa(i)) == wiregqp.StatusUnavailable {
			busy++
		}
	}
	if busy != 48 {
		t.Fatalf("50 distinct arguments at a burst of 2: %d refused, want 48", busy)
	}
	if st := run(); st != wiregqp.StatusOK {
		t.Fatalf("no arguments, after the flood: got %v, want 10", st)
	}
	if n := requests.Load(); n != 4 {
		t.Fatalf("%d upstream requests, want 4", n)
	}
}

// An unreachable upstream is reported in words; its URL and the socket
// error are logged, never sent.
func TestHTTPCommandErrorsInWords(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL + "/secret-internal-path"
	down.Close()
	var logged []error
	hc := &HTTPCommand{URL: url, Log: func(err error) { logged = append(logged, err) }}
	var resp wiregqp.Response
	r := resp.Add(wiregqp.StatusOK, []byte("status"))
	if st := hc.Run(context.Background(), nil, r); st != wiregqp.StatusUnavailable {
		t.Fatalf("got %v, want 31", st)
	}
	if text := string(r.Text); strings.Contains(text, "127.0.0.1") || strings.Contains(text, "secret") || strings.Contains(text, "refused") {
		t.Fatalf("the reply says %q, want words without the URL or the socket error", text)
	}
	if len(logged) != 1 || !strings.Contains(logged[0].Error(), "secret-internal-path") {
		t.Fatalf("logged %v, want the error with the URL", logged)
	}
}

// AnswerNow answers built-in, static and cached commands without blocking;
// a query that needs its upstream runs none of its commands (a failed
// challenge in it counts nothing) and starts the upstream request once,
// so that asking again finds the answer cached.
func TestAnswerNow(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-release
		w.Write([]byte(`{"map": "dm1"}`))
	}))
	defer up.Close()
	defer close(release)
	// One upstream request per budget for the whole test (a budget that
	// refilled within it would make "spent" depend on the machine's speed).
	hc := &HTTPCommand{URL: up.URL, TTL: time.Minute, Rate: 0.001, Burst: 1, Client: up.Client()}
	motd := Command{Name: "motd"}
	motd.Run, motd.Cached = StaticReply([]Pair{{"message", "hi"}})
	s, err := NewServer(ServerConfig{
		Logins:               map[string]string{"admin": "hunter2"},
		MaxChallengeFailures: 1,
		Commands: []Command{
			{Name: "status", Run: hc.Run, Cached: hc.Cached},
			motd,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A trusted source: its failed challenges count without a cookie.
	src := netip.MustParseAddrPort("127.0.0.1:4000")
	now := func(names ...string) ([][]byte, bool) {
		out, _, done := s.AnswerNow(src, padded(t, names...))
		return out, done
	}
	if out, done := now("identify", "motd", "echo a,b"); !done || len(out) != 1 {
		t.Fatalf("built-in and static commands: done %v, %d datagrams, want answered at once", done, len(out))
	}
	// A miss, with a wrong password beside it: nothing runs, the request
	// starts (once, however often the query comes).
	for range 3 {
		if out, done := now("challenge admin,wrong", "status"); done || out != nil {
			t.Fatalf("an uncached upstream command: done %v, want not done", done)
		}
	}
	if _, r := answer(t, s, src.String(), padded(t, "challenge admin,hunter2")); r == nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("a good challenge after the deferred bad ones: got %+v, want OK (the bad ones counted nothing)", r)
	}
	release <- struct{}{}
	var out [][]byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var done bool
		if out, done = now("status"); done || time.Now().After(deadline) {
			break
		}
	}
	var r wiregqp.Response
	if len(out) != 1 || r.Decode(out[0]) != nil || r.Replies[0].Status != wiregqp.StatusOK || string(r.Replies[0].Records[0].Value()) != "dm1" {
		t.Fatalf("the cached answer: got %q", out)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("upstream requests: got %d, want 1", n)
	}
	// Queries with arguments have their own budget (a burst of 1): the
	// first miss starts a request, the next finds the budget spent and
	// is answered 31 at once, without one.
	if _, done := now("status x"); done {
		t.Fatal("a miss with arguments: answered at once, want its request started")
	}
	if out, done := now("status y"); !done || r.Decode(out[0]) != nil || r.Replies[0].Status != wiregqp.StatusUnavailable {
		t.Fatalf("with the budget spent: done %v %q, want 31 at once", done, out)
	}
	for deadline := time.Now().Add(10 * time.Second); requests.Load() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("upstream requests: got %d, want 2", requests.Load())
		}
	}
}

// rulesServer serves a command "rules" whose upstream answers records
// pairs of 100-byte values, cached for an hour: the trusted source asks
// once, so that it is cached.
func rulesServer(tb testing.TB, records int) (*Server, *HTTPCommand) {
	tb.Helper()
	var big strings.Builder
	big.WriteString("{")
	for i := range records - 1 {
		fmt.Fprintf(&big, `"key%04d": "%s",`, i, strings.Repeat("v", 100))
	}
	big.WriteString(`"last": 1}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(big.String()))
	}))
	tb.Cleanup(up.Close)
	hc := &HTTPCommand{URL: up.URL, TTL: time.Hour, Rate: 0.001, Burst: 1, Client: up.Client()}
	s, err := NewServer(ServerConfig{
		Logins:   map[string]string{"admin": "hunter2"},
		Commands: []Command{{Name: "rules", Run: hc.Run, Cached: hc.Cached}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	trusted := netip.MustParseAddrPort("127.0.0.1:4000")
	out, v := s.Answer(context.Background(), trusted, []byte("rules\x04"))
	n := 0
	for _, d := range out {
		n += len(d)
	}
	if n < 100*records || v != Answered {
		tb.Fatalf("the trusted source: %d bytes (%v), want the whole answer", n, v)
	}
	return s, hc
}

// A cached answer larger than the query is not even built for a source
// that is neither trusted nor validated: it could only be dropped, and
// building a large one for every forged datagram would tie up the reader.
// Refusing it allocates nothing: the answer's size was counted when it was
// cached.
func TestAnswerNowRefusesLargeCachedAnswersUnbuilt(t *testing.T) {
	s, _ := rulesServer(t, 200)
	refusedUnbuilt(t, s, netip.MustParseAddrPort("192.0.2.9:4000"), padded(t, "rules"))
}

// refusedUnbuilt checks that AnswerNow drops query from src for
// amplification without allocating: the answer was refused before it was
// built. Under the race detector, which makes sync.Pool drop a random
// share of AnswerNow's decoded queries, only the verdict is checked.
func refusedUnbuilt(t *testing.T, s *Server, src netip.AddrPort, query []byte) {
	t.Helper()
	allocs := testing.AllocsPerRun(50, func() {
		if out, v, done := s.AnswerNow(src, query); !done || out != nil || v != DroppedAmplification {
			t.Fatalf("an unvalidated source: done %v, %d datagrams, %v; want dropped for amplification", done, len(out), v)
		}
	})
	if allocs != 0 && !testutil.Race {
		t.Errorf("refusing the answer took %.0f allocations, want 0 (refused before it is built, its size known)", allocs)
	}
}

// A static command's answer (its records made once, with their size) is
// refused unbuilt to an unvalidated source, as a cached one is; a trusted
// source gets it whole, and a protected one is answered in the query whose
// validate authorises the source.
func TestAnswerNowRefusesLargeStaticAnswersUnbuilt(t *testing.T) {
	pairs := make([]Pair, 200)
	for i := range pairs {
		pairs[i] = Pair{fmt.Sprintf("key%04d", i), strings.Repeat("v", 100)}
	}
	rules, secret := Command{Name: "rules"}, Command{Name: "secret", Protected: true}
	rules.Run, rules.Cached = StaticReply(pairs)
	secret.Run, secret.Cached = StaticReply(pairs[:5])
	s, err := NewServer(ServerConfig{Logins: map[string]string{"admin": "hunter2"}, Commands: []Command{rules, secret}})
	if err != nil {
		t.Fatal(err)
	}
	refusedUnbuilt(t, s, netip.MustParseAddrPort("192.0.2.9:4000"), padded(t, "rules"))

	out, v, done := s.AnswerNow(netip.MustParseAddrPort("127.0.0.1:4000"), []byte("rules\x04"))
	var whole []byte
	for _, d := range out {
		whole = append(whole, d...)
	}
	var resp wiregqp.Response
	if !done || v != Answered || resp.Decode(whole) != nil || len(resp.Replies[0].Records) != len(pairs) {
		t.Fatalf("a trusted source: done %v, %v, %d bytes; want the %d records", done, v, len(whole), len(pairs))
	}
	for i, rec := range resp.Replies[0].Records {
		if rec.Kind != wiregqp.RecordPair || string(rec.Label) != pairs[i].Name || string(rec.Value()) != pairs[i].Value {
			t.Fatalf("record %d: got %s=%s, want %s=%s", i, rec.Label, rec.Value(), pairs[i].Name, pairs[i].Value)
		}
	}

	src := "192.0.2.10:4000"
	r := challengeFrom(t, s, src, "hunter2")
	if r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("challenge from %s: got %+v", src, r)
	}
	out, v, done = s.AnswerNow(netip.MustParseAddrPort(src), validateQuery(t, "validate "+string(r.Records[0].Value()), "secret"))
	if !done || v != Answered || len(out) != 1 || resp.Decode(out[0]) != nil ||
		resp.Replies[1].Status != wiregqp.StatusOK || len(resp.Replies[1].Records) != 5 {
		t.Fatalf("a protected static command after validate: done %v, %v, %d datagrams, %+v; want its 5 records", done, v, len(out), resp.Replies)
	}
}

// Several readers answer at once from the pooled queries and the shared
// cached and static answers: each answer carries its own query's echo and
// the whole answer (run it with -race).
func TestAnswerNowConcurrentReaders(t *testing.T) {
	cached, _ := rulesServer(t, 20)
	pairs := make([]Pair, 20)
	for i := range pairs {
		pairs[i] = Pair{fmt.Sprintf("key%04d", i), strings.Repeat("v", 100)}
	}
	rules := Command{Name: "rules"}
	rules.Run, rules.Cached = StaticReply(pairs)
	static, err := NewServer(ServerConfig{Commands: []Command{rules}})
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddrPort("127.0.0.1:4000")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				s := cached
				if (g+i)%2 == 1 {
					s = static
				}
				tok := fmt.Sprintf("g%d-%d", g, i)
				q, err := mkQuery("echo "+tok, "rules").AppendTo(nil)
				if err != nil {
					t.Error(err)
					return
				}
				out, v, done := s.AnswerNow(src, q)
				var whole []byte
				for _, d := range out {
					whole = append(whole, d...)
				}
				var r wiregqp.Response
				if !done || v != Answered || r.Decode(whole) != nil || len(r.Replies) != 2 ||
					string(r.Replies[0].Text) != tok || len(r.Replies[1].Records) != 20 {
					t.Errorf("%s: done %v, %v, got %+v", tok, done, v, r.Replies)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A forged query cannot lift the early refusal by naming validate: only a
// validate of a live challenge bound to the query's own address and port
// does (one a forger cannot know), so a made-up token, or another port's
// real one, leaves the answer refused unbuilt.
func TestAnswerNowForgedValidateRefusedUnbuilt(t *testing.T) {
	s, _ := rulesServer(t, 50)
	forged := netip.MustParseAddrPort("192.0.2.9:4000")
	r := challengeFrom(t, s, "192.0.2.9:4001", "hunter2")
	if r == nil || r.Status != wiregqp.StatusOK {
		t.Fatalf("challenge from the other port: got %+v", r)
	}
	otherPorts := string(r.Records[0].Value())
	for _, token := range []string{"x", strings.Repeat("0", 32), otherPorts} {
		refusedUnbuilt(t, s, forged, validateQuery(t, "validate "+token, "rules"))
		refusedUnbuilt(t, s, forged, validateQuery(t, "rules", "validate "+token))
	}
	if s.Authorized(forged) {
		t.Fatal("the forged source is authorised")
	}
}

// A source that validates in the query that asks for a large cached
// answer gets it from AnswerNow as an authorised source, whichever of the
// two comes first, and is authorised from then on.
func TestAnswerNowValidateInTheSameQuery(t *testing.T) {
	s, _ := rulesServer(t, 50)
	for i, order := range [][]string{{"validate", "rules"}, {"rules", "validate"}} {
		src := fmt.Sprintf("192.0.2.10:%d", 4000+i)
		r := challengeFrom(t, s, src, "hunter2")
		if r == nil || r.Status != wiregqp.StatusOK {
			t.Fatalf("challenge from %s: got %+v", src, r)
		}
		names := slices.Clone(order)
		names[slices.Index(names, "validate")] += " " + string(r.Records[0].Value())
		q := validateQuery(t, names...)
		out, v, done := s.AnswerNow(netip.MustParseAddrPort(src), q)
		var whole []byte
		for _, d := range out {
			whole = append(whole, d...)
		}
		var resp wiregqp.Response
		if !done || v != Answered || resp.Decode(whole) != nil || len(resp.Replies) != 3 {
			t.Fatalf("%v from %s: done %v, %v, %d bytes; want answered", order, src, done, v, len(whole))
		}
		for j, name := range order {
			if got := resp.Replies[j]; got.Status != wiregqp.StatusOK || name == "rules" && len(got.Records) != 50 {
				t.Fatalf("%v from %s: %s got status %v with %d records, want 10 (with 50 records for rules)", order, src, name, got.Status, len(got.Records))
			}
		}
		if len(whole) <= len(q) || len(whole) > 10*len(q) {
			t.Fatalf("%v from %s: %d bytes for a %d-byte query, want more than the query and at most 10 times it", order, src, len(whole), len(q))
		}
		if !s.Authorized(netip.MustParseAddrPort(src)) {
			t.Fatalf("%v from %s: not authorised after validating", order, src)
		}
	}
}

// validateQuery is the query of names padded to about 1 KB: rulesServer's
// 50 records (about 5.6 KB) are more than it holds and less than 10 times
// it, the limit of an authorised source.
func validateQuery(t *testing.T, names ...string) []byte {
	t.Helper()
	return paddedBy(t, 1000, names...)
}

// A hit returns the answer made when the upstream's records were cached,
// with its size counted then: no allocation, whatever the answer's size.
func TestHTTPCommandCachedHitAllocatesNothing(t *testing.T) {
	_, hc := rulesServer(t, 200)
	want := len("last") + len("1")
	for i := range 199 {
		want += len(fmt.Sprintf("key%04d", i)) + 100
	}
	var a CachedAnswer
	allocs := testing.AllocsPerRun(50, func() {
		var ok bool
		if a, ok = hc.Cached(nil); !ok {
			t.Fatal("the cached answer: not a hit")
		}
	})
	if allocs != 0 && !testutil.Race {
		t.Errorf("a hit took %.0f allocations, want 0", allocs)
	}
	if a.Size != want {
		t.Errorf("the answer's size: got %d, want %d (its names and values)", a.Size, want)
	}
	var resp wiregqp.Response
	if st := a.Fill(resp.Add(wiregqp.StatusOK, []byte("rules"))); st != wiregqp.StatusOK || len(resp.Replies[0].Records) != 200 {
		t.Errorf("the cached answer fills status %v with %d records, want 10 with 200", st, len(resp.Replies[0].Records))
	}
}

// BenchmarkAnswerNowRefusal refuses a cached answer of 10 and of 500
// records to an unvalidated source, asked alone and beside a validate of a
// made-up token, and a static answer of as many records: the cost does not
// grow with the answer.
func BenchmarkAnswerNowRefusal(b *testing.B) {
	for _, n := range []int{10, 500} {
		s, _ := rulesServer(b, n)
		pairs := make([]Pair, n)
		for i := range pairs {
			pairs[i] = Pair{fmt.Sprintf("key%04d", i), strings.Repeat("v", 100)}
		}
		rules := Command{Name: "rules"}
		rules.Run, rules.Cached = StaticReply(pairs)
		static, err := NewServer(ServerConfig{Commands: []Command{rules}})
		if err != nil {
			b.Fatal(err)
		}
		forged := netip.MustParseAddrPort("192.0.2.9:4000")
		for _, q := range []struct {
			name, query string
			s           *Server
		}{
			{"plain", "rules\x04", s},
			{"validate", "validate\x1ex\x1drules\x04", s},
			{"static", "rules\x04", static},
		} {
			b.Run(fmt.Sprintf("records=%d/%s", n, q.name), func(b *testing.B) {
				query := []byte(q.query)
				b.ReportAllocs()
				for b.Loop() {
					if _, v, _ := q.s.AnswerNow(forged, query); v != DroppedAmplification {
						b.Fatalf("got %v, want dropped for amplification", v)
					}
				}
			})
		}
	}
}
