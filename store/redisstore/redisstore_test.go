package redisstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/store/redisstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.StopSharedRedis()
	os.Exit(code)
}

// newStore returns a Store on the test binary's redis-server under a key
// prefix of the test's own, closed when the test ends.
func newStore(t *testing.T, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	r := testutil.SharedRedis(t)
	cfg.Addresses = []string{r.Addr}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = testutil.RedisPrefix(t)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := redisstore.New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreLoadStatDelete(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, redisstore.Config{})
	var st certmagic.Storage = s

	if _, err := st.Load(ctx, "certificates/a/b.crt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing key: got %v, want fs.ErrNotExist", err)
	}
	if _, err := st.Stat(ctx, "certificates"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing key: got %v, want fs.ErrNotExist", err)
	}
	if _, err := st.List(ctx, "certificates", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of a missing key: got %v, want fs.ErrNotExist", err)
	}
	if err := st.Delete(ctx, "certificates/none"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}

	before := time.Now().Add(-time.Second)
	for key, value := range map[string]string{
		"certificates/a/b.crt": "cert b",
		"certificates/a/b.key": "key b",
		"certificates/c/d.crt": "cert d",
		"/top":                 "", // an empty value is a value
	} {
		if err := st.Store(ctx, key, []byte(value)); err != nil {
			t.Fatalf("Store %s: %v", key, err)
		}
	}
	if err := st.Store(ctx, "certificates/a/b.crt", []byte("cert b, renewed")); err != nil {
		t.Fatal(err)
	}
	if b, err := st.Load(ctx, "certificates/a/b.crt"); err != nil || string(b) != "cert b, renewed" {
		t.Fatalf("Load after overwrite: got %q, %v", b, err)
	}
	if b, err := st.Load(ctx, "top"); err != nil || len(b) != 0 {
		t.Fatalf("Load of an empty value: got %q, %v", b, err)
	}

	info, err := st.Stat(ctx, "certificates/a/b.crt")
	if err != nil || !info.IsTerminal || info.Size != int64(len("cert b, renewed")) || info.Key != "certificates/a/b.crt" ||
		info.Modified.Before(before) || info.Modified.After(time.Now().Add(time.Second)) {
		t.Fatalf("Stat of a value: got %+v, %v", info, err)
	}
	if info, err := st.Stat(ctx, "certificates/a"); err != nil || info.IsTerminal {
		t.Fatalf("Stat of a directory: got %+v, %v, want a non-terminal key", info, err)
	}
	for _, key := range []string{"certificates", "certificates/a", "certificates/a/b.key", "top"} {
		if !st.Exists(ctx, key) {
			t.Fatalf("Exists(%q) is false", key)
		}
	}
	if st.Exists(ctx, "certificates/b") {
		t.Fatal("Exists of a missing key is true")
	}

	for _, c := range []struct {
		prefix    string
		recursive bool
		want      []string
	}{
		{"certificates", false, []string{"certificates/a", "certificates/c"}},
		{"certificates/", false, []string{"certificates/a", "certificates/c"}},
		{"certificates", true, []string{"certificates/a", "certificates/a/b.crt", "certificates/a/b.key", "certificates/c", "certificates/c/d.crt"}},
		{"certificates/a", true, []string{"certificates/a/b.crt", "certificates/a/b.key"}},
		{"", false, []string{"certificates", "top"}},
		{"top", true, nil},
	} {
		got, err := st.List(ctx, c.prefix, c.recursive)
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("List(%q, %v): got %q, %v, want %q", c.prefix, c.recursive, got, err, c.want)
		}
	}

	// Deleting a value leaves its directory while it holds others.
	if err := st.Delete(ctx, "certificates/a/b.key"); err != nil {
		t.Fatal(err)
	}
	if st.Exists(ctx, "certificates/a/b.key") || !st.Exists(ctx, "certificates/a") {
		t.Fatal("after deleting one of two values, the value exists or its directory does not")
	}
	// Deleting the last one removes the directories it leaves empty.
	if err := st.Delete(ctx, "certificates/a/b.crt"); err != nil {
		t.Fatal(err)
	}
	if st.Exists(ctx, "certificates/a") {
		t.Fatal("an emptied directory still exists")
	}
	if got, _ := st.List(ctx, "certificates", false); !slices.Equal(got, []string{"certificates/c"}) {
		t.Fatalf("List after emptying a directory: got %q", got)
	}
	// Deleting a directory deletes everything below it.
	if err := st.Store(ctx, "certificates/c/e/f", []byte("f")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "certificates"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"certificates", "certificates/c", "certificates/c/d.crt", "certificates/c/e/f"} {
		if st.Exists(ctx, key) {
			t.Fatalf("%s exists after deleting its directory", key)
		}
	}
	if got, err := st.List(ctx, "", true); err != nil || !slices.Equal(got, []string{"top"}) {
		t.Fatalf("List of the root after deleting a directory: got %q, %v", got, err)
	}
}

// A key may be a value and a directory at once; deleting one keeps the
// other listed.
func TestValueAndDirectory(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, redisstore.Config{})
	for _, k := range []string{"a", "a/b"} {
		if err := s.Store(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.List(ctx, "", false); err != nil || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("List after deleting a value's child: got %q, %v, want [a]", got, err)
	}
	if info, err := s.Stat(ctx, "a"); err != nil || !info.IsTerminal {
		t.Fatalf("Stat: got %+v, %v", info, err)
	}
}

// Two stores under different prefixes on one server see nothing of each
// other's.
func TestKeyPrefixSeparates(t *testing.T) {
	ctx := context.Background()
	a, b := newStore(t, redisstore.Config{}), newStore(t, redisstore.Config{})
	if err := a.Store(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, "k"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("another prefix's key: got %v, want fs.ErrNotExist", err)
	}
}

// Two stores on one prefix are two nodes: of many contenders, one holds
// the lock at a time.
func TestLockOneHolderAtATime(t *testing.T) {
	prefix := testutil.RedisPrefix(t)
	nodes := []*redisstore.Store{
		newStore(t, redisstore.Config{KeyPrefix: prefix, LockPoll: 10 * time.Millisecond}),
		newStore(t, redisstore.Config{KeyPrefix: prefix, LockPoll: 10 * time.Millisecond}),
	}
	var holders, maxHolders, turns atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := nodes[i%2]
			for range 5 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := s.Lock(ctx, "issue/cert"); err != nil {
					cancel()
					t.Errorf("Lock: %v", err)
					return
				}
				n := holders.Add(1)
				for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
				}
				turns.Add(1)
				time.Sleep(time.Millisecond) // the critical section
				holders.Add(-1)
				if err := s.Unlock(ctx, "issue/cert"); err != nil {
					t.Errorf("Unlock: %v", err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if maxHolders.Load() != 1 || turns.Load() != 40 {
		t.Fatalf("got at most %d holders at once over %d turns, want 1 over 40", maxHolders.Load(), turns.Load())
	}
}

// A lock whose holder died (it stopped renewing: here a token no Store
// renews) expires, and a contender then takes it.
func TestLockOfDeadHolderExpires(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	s := newStore(t, redisstore.Config{KeyPrefix: prefix, LockPoll: 20 * time.Millisecond})
	if got := r.Do(t, "SET", "{"+prefix+"}l:dead", "a dead holder's token", "PX", "1500", "NX"); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	if ok, err := s.TryLock(context.Background(), "dead"); ok || err != nil {
		t.Fatalf("TryLock of a held lock: got %v, %v, want false", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Lock(ctx, "dead"); err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("took the lock after %v, before the dead holder's expiry", waited)
	}
	if err := s.Unlock(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
}

// A held lock is renewed: it outlives its expiry many times over while
// its holder lives, and is free at once when released.
func TestLockRenewedWhileHeld(t *testing.T) {
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix, LockExpiry: duration.Duration(time.Second)})
	b := newStore(t, redisstore.Config{KeyPrefix: prefix, LockExpiry: duration.Duration(time.Second)})
	ctx := context.Background()
	if err := a.Lock(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	// The passing of time is what is tested: three expiries.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, err := b.TryLock(ctx, "held"); ok || err != nil {
			t.Fatalf("another node took a held lock: %v, %v", ok, err)
		}
	}
	if err := a.Unlock(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx, "held"); !ok || err != nil {
		t.Fatalf("TryLock of a released lock: got %v, %v", ok, err)
	}
	if err := b.Unlock(ctx, "held"); err != nil {
		t.Fatal(err)
	}
}

// Unlock releases only its own lock: a lock that expired and was taken by
// another holder stays theirs.
func TestUnlockLeavesAnothersLock(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	s := newStore(t, redisstore.Config{KeyPrefix: prefix})
	ctx := context.Background()
	if err := s.Lock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	key := "{" + prefix + "}l:x"
	r.Do(t, "SET", key, "another holder") // ours expired; another took it
	if err := s.Unlock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if got := r.Do(t, "GET", key); got != "another holder" {
		t.Fatalf("after Unlock, the lock holds %q, want another holder's", got)
	}
	if err := s.Unlock(ctx, "x"); err == nil {
		t.Fatal("Unlock of a lock not held: no error")
	}
}

// Lock gives up when its context ends.
func TestLockHonoursContext(t *testing.T) {
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix})
	b := newStore(t, redisstore.Config{KeyPrefix: prefix})
	if err := a.Lock(context.Background(), "busy"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.Lock(ctx, "busy"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock until the context ends: got %v", err)
	}
}

// With no server, every operation fails within its timeout with an error
// matching ErrUnavailable, and none reads as a missing key.
func TestUnreachableServer(t *testing.T) {
	s := redisstore.New(redisstore.Config{Addresses: []string{testutil.FreeTCPAddr(t)}, Timeout: duration.Duration(500 * time.Millisecond)})
	defer s.Close()
	ctx := context.Background()
	start := time.Now()
	_, loadErr := s.Load(ctx, "k")
	for name, err := range map[string]error{
		"Store": s.Store(ctx, "k", []byte("v")),
		"Load":  loadErr,
		"List":  func() error { _, err := s.List(ctx, "", true); return err }(),
		"Stat":  func() error { _, err := s.Stat(ctx, "k"); return err }(),
	} {
		if !errors.Is(err, redisstore.ErrUnavailable) || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s with no server: got %v, want ErrUnavailable", name, err)
		}
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Fatalf("four operations took %v", elapsed)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  redisstore.Config
		want string
	}{
		{"no port", redisstore.Config{Addresses: []string{"localhost"}}, "want host:port"},
		{"bad port", redisstore.Config{Addresses: []string{"localhost:0"}}, "port must be"},
		{"bare IPv6", redisstore.Config{Addresses: []string{"::1:6379"}}, "want host:port"},
		{"negative db", redisstore.Config{DB: -1}, "db must be"},
		{"db in a cluster", redisstore.Config{DB: 1, Addresses: []string{"a:1", "b:1"}}, "db must be 0"},
		{"server name without tls", redisstore.Config{TLSServerName: "x"}, "need tls"},
		{"braces in prefix", redisstore.Config{KeyPrefix: "a{b}"}, "key_prefix"},
		{"negative timeout", redisstore.Config{Timeout: -1}, "timeout must be"},
		{"long timeout", redisstore.Config{DialTimeout: duration.Duration(time.Hour)}, "dial_timeout must be"},
		{"short lock expiry", redisstore.Config{LockExpiry: duration.Duration(time.Millisecond)}, "lock_expiry must be"},
		{"username without password", redisstore.Config{Username: "u"}, "username needs a password"},
		{"trusted CAs without tls", redisstore.Config{TLSTrustedCACerts: []string{"ca.pem"}}, "tls_trusted_ca_certs needs tls"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if err == nil || !contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	ok := redisstore.Config{Addresses: []string{"[::1]:6379", "redis.internal:6380"}, Username: "u", Password: "p", TLS: true, TLSServerName: "redis"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// After the server restarts, operations succeed again within DownFor
// and a margin: pooled connections to the old process and its script
// cache are gone.
func TestServerRestart(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{AppendOnly: true})
	s := redisstore.New(redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: testutil.RedisPrefix(t)})
	defer s.Close()
	ctx := context.Background()
	for i := range 20 {
		if err := s.Store(ctx, "k/"+strconv.Itoa(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	r.Stop(t)
	if err := s.Store(ctx, "k", []byte("v")); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Store with the server stopped: got %v", err)
	}
	r.Start(t)
	back := time.Now()
	testutil.WaitFor(t, "the store to answer again", func() bool {
		return s.Store(ctx, "k/0", []byte("again")) == nil
	})
	if d := time.Since(back); d > redisstore.DownFor+time.Second {
		t.Fatalf("the store answered %v after the server, want within %v", d, redisstore.DownFor+time.Second)
	}
	for i := range 20 {
		if err := s.Store(ctx, "k/"+strconv.Itoa(i), []byte("again")); err != nil {
			t.Fatalf("Store %d after the restart: %v", i, err)
		}
	}
	if b, err := s.Load(ctx, "k/0"); err != nil || string(b) != "again" {
		t.Fatalf("Load after the restart: %q, %v", b, err)
	}
}

// A server that stops answering (its process paused: connections are
// accepted, nothing comes back) costs the first operation its timeout;
// the operations after it fail at once with ErrDown, which is also
// ErrUnavailable, instead of each waiting out the timeout again, so a
// request needing several operations fails within about one timeout.
// Once the server answers again, operations succeed without a restart.
func TestStoreFailsFastWhileTheServerIsSilent(t *testing.T) {
	ctx := context.Background()
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	cfg := redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: testutil.RedisPrefix(t), Timeout: duration.Duration(300 * time.Millisecond)}
	s := redisstore.New(cfg)
	t.Cleanup(func() { s.Close() })
	if err := s.Store(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}

	r.Pause(t)
	if _, err := s.Load(ctx, "k"); !errors.Is(err, redisstore.ErrUnavailable) || errors.Is(err, redisstore.ErrDown) {
		t.Fatalf("the first operation on a silent server: got %v, want it to time out (ErrUnavailable)", err)
	}
	ops := map[string]func() error{
		"Load":    func() error { _, err := s.Load(ctx, "k"); return err },
		"Store":   func() error { return s.Store(ctx, "k2", []byte("v")) },
		"Allow":   func() error { _, _, err := s.Allow(ctx, "x", time.Second, time.Second); return err },
		"TryLock": func() error { _, err := s.TryLock(ctx, "l"); return err },
		"Client":  func() error { return s.Client().Get(ctx, "raw").Err() },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, redisstore.ErrDown) || !errors.Is(err, redisstore.ErrUnavailable) {
			t.Fatalf("%s right after a timeout: got %v, want ErrDown (and ErrUnavailable) at once", name, err)
		}
	}

	r.Resume(t)
	testutil.WaitFor(t, "the store to answer again", func() bool {
		v, err := s.Load(ctx, "k")
		return err == nil && string(v) == "v"
	})
}

// A refused connection is an outage too: the first operation fails at
// once (one dial, no dial retries), and the operations after it are not
// sent (ErrDown) for DownFor, so that a request needing several fails
// at its first.
func TestStoreFailsFastWhileTheServerRefuses(t *testing.T) {
	ctx := context.Background()
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	s := redisstore.New(redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: testutil.RedisPrefix(t)})
	t.Cleanup(func() { s.Close() })
	if err := s.Store(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	r.Stop(t)
	start := time.Now()
	_, err := s.Load(ctx, "k")
	if !errors.Is(err, redisstore.ErrUnavailable) || errors.Is(err, redisstore.ErrDown) || errors.Is(err, redisstore.ErrDenied) {
		t.Fatalf("the first operation on a stopped server: got %v, want it refused (ErrUnavailable)", err)
	}
	if _, _, err := s.Allow(ctx, "x", time.Second, time.Second); !errors.Is(err, redisstore.ErrDown) {
		t.Fatalf("an operation right after a refusal: got %v, want ErrDown", err)
	}
	// go-redis's default of five dials 100 ms apart, twice, took 0.8 s.
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("two operations on a stopped server took %v, want well under the 1 s timeout", d)
	}
}

// Two holders of one lock name in one process, the first of whose lock
// expired (its renewals did not reach the server) before the second took
// it: the first holder's Unlock must not release the second's lock, or a
// third holder (another node) would take it while the second still holds
// it. Unlock releases the oldest of the holds it has by that name, and an
// expired one releases nothing.
func TestUnlockOfAnExpiredHoldLeavesTheNewHolder(t *testing.T) {
	ctx := context.Background()
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix})
	other := newStore(t, redisstore.Config{KeyPrefix: prefix})

	if ok, err := a.TryLock(ctx, "cert"); !ok || err != nil {
		t.Fatalf("first TryLock: %v %v", ok, err)
	}
	// The first hold expires on the server (as after an outage longer
	// than lock_expiry).
	r.Do(t, "DEL", a.KeyPrefix()+"l:cert")
	if ok, err := a.TryLock(ctx, "cert"); !ok || err != nil {
		t.Fatalf("second TryLock after the first expired: %v %v", ok, err)
	}
	// The first holder finishes and unlocks.
	if err := a.Unlock(ctx, "cert"); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx, "cert"); ok || err != nil {
		t.Fatalf("another node took the lock while its second holder still held it (%v)", err)
	}
	// The second holder unlocks: the lock is free.
	if err := a.Unlock(ctx, "cert"); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx, "cert"); !ok || err != nil {
		t.Fatalf("the lock is not free after both holders unlocked: %v %v", ok, err)
	}
	if err := other.Unlock(ctx, "cert"); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx, "cert"); err == nil {
		t.Fatal("a third Unlock of a lock held twice succeeded")
	}
}

// A caller's own short deadline expiring while the server is slow does
// not mark the server down: the next operation is sent (and, the server
// answering again, succeeds) instead of failing with ErrDown.
func TestCallerDeadlineDoesNotMarkTheServerDown(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	s := redisstore.New(redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: testutil.RedisPrefix(t), Timeout: duration.Duration(2 * time.Second)})
	t.Cleanup(func() { s.Close() })
	if err := s.Store(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	r.Pause(t)
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_, err := s.Load(short, "k")
	cancel()
	if !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Load past the caller's deadline: got %v", err)
	}
	r.Resume(t)
	if v, err := s.Load(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("Load after the caller's own deadline passed: got %q, %v; want the value (the server was not marked down)", v, err)
	}
}

// Apply writes several keys and deletes others in one transaction, so
// that a reader never sees part of it: discovery's admin change and its
// version, for one.
func TestApplyIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, redisstore.Config{})
	for _, k := range []string{"d/fleets/old", "d/fleets/kept", "d/version"} {
		if err := s.Store(ctx, k, []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	r := testutil.SharedRedis(t)
	execs := func() int {
		for _, line := range strings.Split(r.Do(t, "INFO", "commandstats"), "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_exec:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	before := execs()
	if err := s.Apply(ctx, map[string][]byte{"d/fleets/new": []byte("n"), "d/version": []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	if n := execs() - before; n != 1 {
		t.Fatalf("Apply of two values: %d transactions, want 1 (one MULTI/EXEC)", n)
	}
	if err := s.Apply(ctx, map[string][]byte{"d/version": []byte("3")}, []string{"d/fleets/old"}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"d/fleets/new": "n", "d/fleets/kept": "before", "d/version": "3"} {
		if b, err := s.Load(ctx, key); err != nil || string(b) != want {
			t.Fatalf("Load %s: %q, %v; want %q", key, b, err, want)
		}
	}
	if _, err := s.Load(ctx, "d/fleets/old"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a key Apply deleted: %v, want fs.ErrNotExist", err)
	}
	if keys, err := s.List(ctx, "d", true); err != nil || strings.Join(keys, " ") != "d/fleets d/fleets/kept d/fleets/new d/version" {
		t.Fatalf("List after Apply: %v, %v", keys, err)
	}
}

// A hold that expired while its renewals did not reach the server, and
// that no one took meanwhile, is taken again by the next renewal: the
// holder still holds it, and another node cannot take it.
func TestLockExpiredWhileHeldIsTakenAgain(t *testing.T) {
	ctx := context.Background()
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix, LockExpiry: duration.Duration(time.Second)})
	b := newStore(t, redisstore.Config{KeyPrefix: prefix, LockExpiry: duration.Duration(time.Second)})
	if err := a.Lock(ctx, "cert"); err != nil {
		t.Fatal(err)
	}
	key := a.KeyPrefix() + "l:cert"
	token := r.Do(t, "GET", key)
	r.Do(t, "DEL", key) // as if it expired during an outage
	testutil.WaitFor(t, "the holder's renewal to take the lock again", func() bool {
		return r.Do(t, "GET", key) == token
	})
	if ok, err := b.TryLock(ctx, "cert"); ok || err != nil {
		t.Fatalf("another node took a lock its holder took again: %v, %v", ok, err)
	}
	if err := a.Unlock(ctx, "cert"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx, "cert"); !ok || err != nil {
		t.Fatalf("TryLock after the holder released it: %v, %v", ok, err)
	}
	_ = b.Unlock(ctx, "cert")
}
