package serverlist

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// An answer is held while what it is made of is unchanged, and built anew
// after: a refreshed status, a server that registers, a status due for
// its refresh. Each change gives a new body and ETag, and the old ETag
// then gets the new answer, not a 304. Clients of another visibility
// class never get an answer held for another's.
func TestAnswersHeldUntilTheirInputsChange(t *testing.T) {
	var version atomic.Int32
	r := newQueryRig(t, func(addr string) (*query.Status, error) {
		st := &query.Status{Name: "Live " + addr, Version: fmt.Sprint("v", version.Load()), Raw: map[string]any{}}
		st.SetAddress(addr, 0)
		return st, nil
	})
	body := func(from string) (string, string) {
		w, _ := r.get(t, from, "/", nil)
		if w.Code != 200 {
			t.Fatalf("GET / from %s: %d", from, w.Code)
		}
		return w.Body.String(), w.Header().Get("ETag")
	}
	testutil.WaitFor(t, "every status", func() bool {
		b, _ := body("127.0.0.1:9")
		return strings.Count(b, `"name":"Live `) == 4
	})
	held, etag := body("127.0.0.1:9")
	queries := r.queries.Load()
	for range 3 {
		if b, e := body("127.0.0.1:9"); b != held || e != etag {
			t.Fatalf("nothing changed: a new answer %s (%s), want %s", e, b, etag)
		}
	}
	if n, _ := r.list.heldAnswers(); n != 1 || r.queries.Load() != queries {
		t.Fatalf("%d answers held, %d queries more; want 1, none", n, r.queries.Load()-queries)
	}
	if w, _ := r.get(t, "127.0.0.1:9", "/", http.Header{"If-None-Match": {etag}}); w.Code != 304 {
		t.Fatalf("If-None-Match the held ETag: %d, want 304", w.Code)
	}
	// Another class: the public client sees no loopback or private server.
	if b, _ := body("203.0.113.1:9"); strings.Contains(b, "127.0.0.1") || strings.Contains(b, "10.0.0.1") {
		t.Fatalf("a public client got %s", b)
	}

	// A server registers: the next answer lists it.
	register(t, r.master, "127.0.0.1:5", `\hostname\Newcomer\mapname\oa_dm1\clients\0\sv_maxclients\8`)
	b, e := body("127.0.0.1:9")
	if !strings.Contains(b, "127.0.0.1:5") || e == etag {
		t.Fatalf("after a registration: ETag %s (was %s), %s", e, etag, b)
	}
	testutil.WaitFor(t, "the newcomer's status", func() bool {
		b, _ := body("127.0.0.1:9")
		return strings.Contains(b, `"name":"Live 127.0.0.1:5"`)
	})
	held, etag = body("127.0.0.1:9")

	// The statuses are due for a refresh: the first request past the TTL
	// starts the refreshes, and the answers after them show the new
	// statuses.
	version.Store(1)
	r.clock.Advance(DefaultTTL)
	testutil.WaitFor(t, "the refreshed statuses", func() bool {
		b, _ := body("127.0.0.1:9")
		return strings.Count(b, `"version":"v1"`) == 5
	})
	if b, e := body("127.0.0.1:9"); b == held || e == etag {
		t.Fatalf("after the refreshes: the same ETag %s", e)
	}
	if w, _ := r.get(t, "127.0.0.1:9", "/", http.Header{"If-None-Match": {etag}}); w.Code != 200 {
		t.Fatalf("If-None-Match the ETag before the refreshes: %d, want 200", w.Code)
	}
}

// A gateway's server's status refreshed through the gateway makes a new
// answer too.
func TestAnswersFollowGatewayStatuses(t *testing.T) {
	r := newRig(t, nil)
	var version atomic.Int32
	p := &versionedProtocol{version: &version}
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Servers: map[string]query.Server{
		"alpha": {Name: "alpha", Address: "127.0.0.1:50", Protocol: p}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} }})
	shows := func(want string) func() bool {
		return func() bool {
			w, _ := r.get(t, "127.0.0.1:9", "/", nil)
			return strings.Contains(w.Body.String(), `"version":"`+want+`"`)
		}
	}
	testutil.WaitFor(t, "the gateway's status", shows("v0"))
	// The master's servers expire, their statuses are forgotten: the
	// gateway's server is all that is left to change.
	r.clock.Advance(time.Hour)
	testutil.WaitFor(t, "the gateway's server alone", func() bool {
		w, _ := r.get(t, "127.0.0.1:9", "/", nil)
		return strings.Count(w.Body.String(), `"name"`) == 1 && strings.Contains(w.Body.String(), `"version":"v0"`) &&
			r.statuses.Len() == 0
	})
	version.Store(1)
	r.clock.Advance(time.Hour)
	testutil.WaitFor(t, "the gateway's refreshed status", shows("v1"))
}

// versionedProtocol answers every status with the version it holds.
type versionedProtocol struct {
	fakeProtocol
	version *atomic.Int32
}

func (p *versionedProtocol) Status(_ context.Context, addr string) (*query.Status, error) {
	st := &query.Status{Name: "Versioned", Version: fmt.Sprint("v", p.version.Load()), Raw: map[string]any{}}
	st.SetAddress(addr, 0)
	return st, nil
}

// Queries a client chooses cannot grow what the list holds: distinct
// filters by the thousand leave at most maxAnswers answers of at most
// maxAnswerBytes in all, the heap grows by no more than that, and a
// filter with long texts is answered without being held.
func TestAnswersBounded(t *testing.T) {
	r := newRig(t, nil)
	long := strings.Repeat("x", maxFilterText+1)
	if w, _ := r.get(t, "127.0.0.1:9", "/?game="+long, nil); w.Code != 200 {
		t.Fatalf("a long filter: %d", w.Code)
	}
	if n, _ := r.list.heldAnswers(); n != 0 {
		t.Fatalf("a filter of %d bytes held: %d answers", len(long), n)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const requests = 4 * maxAnswers
	for i := range requests {
		if w, _ := r.get(t, "127.0.0.1:9", fmt.Sprintf("/?map=%d-%s", i, strings.Repeat("m", 100)), nil); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n, bytes := r.list.heldAnswers()
	if n > maxAnswers || bytes > maxAnswerBytes || n < maxAnswers/2 {
		t.Fatalf("%d answers of %d bytes held after %d distinct queries; want %d to %d, at most %d bytes",
			n, bytes, requests, maxAnswers/2, maxAnswers, maxAnswerBytes)
	}
	// Each held answer is its body, its key (a filter of 100-odd bytes)
	// and ETag: 1 KiB besides its body is generous. Were every answer
	// held, the heap would grow four times as much.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > int64(bytes)+int64(n)<<10 {
		t.Fatalf("the heap grew by %d bytes for %d held answers of %d bytes", grown, n, bytes)
	}
}

// The bytes held stay within the budget whatever the answers' sizes: a
// budget of a few answers holds no more.
func TestAnswersBoundedInBytes(t *testing.T) {
	r := newRig(t, nil)
	w, _ := r.get(t, "127.0.0.1:9", "/", nil)
	size := w.Body.Len()
	r.list.maxAnswerBytes = 3*size + size/2
	for i := range 50 {
		if w, _ := r.get(t, "127.0.0.1:9", fmt.Sprintf("/?limit=%d", 10+i), nil); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
		if n, bytes := r.list.heldAnswers(); bytes > r.list.maxAnswerBytes || n > 3 {
			t.Fatalf("%d answers of %d bytes held, budget %d bytes (answers of about %d)", n, bytes, r.list.maxAnswerBytes, size)
		}
	}
}

// A gateway's server that the master lists too shows the game it
// registered with; when that registration expires, the answer after
// shows it no longer, though nothing else changed.
func TestAnswersFollowARegistrationOfAGatewayServerExpiring(t *testing.T) {
	r := newRig(t, nil)
	var version atomic.Int32
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Options: query.Options{DefaultTTL: duration.Duration(24 * time.Hour)}, Servers: map[string]query.Server{
		"alpha": {Name: "alpha", Address: "127.0.0.1:50", Protocol: &versionedProtocol{version: &version}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} }})
	body := func() string {
		w, _ := r.get(t, "127.0.0.1:9", "/", nil)
		return w.Body.String()
	}
	// The rig's own servers expire first: then nothing but the gateway's
	// server and its registration is left.
	r.clock.Advance(master.DefaultExpiry / 2)
	register(t, r.master, "127.0.0.1:50", `\hostname\Alpha\mapname\oa_dm1\clients\0\sv_maxclients\8\gamename\Tagged`)
	testutil.WaitFor(t, "the gateway's status with the registered game", func() bool {
		b := body()
		return strings.Contains(b, `"version":"v0"`) && strings.Contains(b, `"game":"Tagged"`)
	})
	r.clock.Advance(master.DefaultExpiry/2 + time.Second)
	testutil.WaitFor(t, "the rig's servers gone", func() bool { return strings.Count(body(), `"name"`) == 1 })
	if !strings.Contains(body(), `"game":"Tagged"`) {
		t.Fatalf("the registration has not expired yet: %s", body())
	}
	r.clock.Advance(master.DefaultExpiry / 2)
	testutil.WaitFor(t, "the registered game gone with the registration", func() bool {
		return !strings.Contains(body(), `"game":"Tagged"`)
	})
}
