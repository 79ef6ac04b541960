package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

const relaySecret = "relay-test-secret-0123456789abcdef"

func relayCaddyfile(addr, httpAddr, storage, options string) string {
	if options != "" {
		options = "\n\t\t\t\t\t" + options
	}
	return fmt.Sprintf(`{
	storage file_system %s
	layer4 {
		udp/%s {
			@relay relay
			route @relay {
				relay {
					secrets {env.GAMEGATE_TEST_RELAY_SECRET}%s
				}
			}
		}
	}
}
http://%s {
	relay_allocations {
		secrets {env.GAMEGATE_TEST_RELAY_SECRET}
		tokens relay-test-token
		public_address %s
		max_connections 10
	}
}
`, storage, addr, options, httpAddr, addr)
}

type relayEnv struct {
	addr   string
	api    *relay.APIClient
	caddy  *testcaddy.Caddy
	cfg    string
	sealer *relay.Sealer
}

func startRelay(t *testing.T, options string) *relayEnv {
	t.Helper()
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	env := &relayEnv{addr: testutil.FreeUDPAddr(t)}
	httpAddr := testutil.FreeTCPAddr(t)
	env.api = &relay.APIClient{Base: "http://" + httpAddr, Token: "relay-test-token"}
	env.cfg = relayCaddyfile(env.addr, httpAddr, t.TempDir(), options)
	env.caddy = testcaddy.Start(t, env.cfg)
	var err error
	if env.sealer, err = relay.NewSealer([]byte(relaySecret)); err != nil {
		t.Fatal(err)
	}
	return env
}

// allocation makes an allocation as the allocations API would.
func (env *relayEnv) allocation(t *testing.T, maxConn int) (*relay.Allocation, []byte) {
	t.Helper()
	a, err := relay.NewAllocation(maxConn, "test", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	data, err := env.sealer.Seal(a)
	if err != nil {
		t.Fatal(err)
	}
	return a, data
}

func (env *relayEnv) dial(t *testing.T, maxConn int) (*relay.Client, *relay.Allocation, []byte) {
	t.Helper()
	a, data := env.allocation(t, maxConn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := relay.Dial(ctx, relay.ClientConfig{
		Server: env.addr, Local: "127.0.0.1:0",
		AllocationID: a.ID, Key: a.Key[:], ConnectionData: data,
		BindRetry: 200 * time.Millisecond, ConnectRetry: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, a, data
}

// dialAPI binds a client to an allocation the HTTP API handed out, as a game
// does.
func (env *relayEnv) dialAPI(t *testing.T, a *relay.APIAllocation) *relay.Client {
	t.Helper()
	cfg, err := relay.ClientConfigFor(a)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Local, cfg.BindRetry, cfg.ConnectRetry = "127.0.0.1:0", 200*time.Millisecond, 200*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := relay.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func connectTo(t *testing.T, c *relay.Client, hostData []byte) (wirerelay.AllocationID, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, hostData)
}

// payload is message seq of joiner j: deterministic bytes a receiver can
// check.
func payload(j byte, seq uint32) []byte {
	b := make([]byte, 8+int(seq%200))
	b[0] = j
	binary.BigEndian.PutUint32(b[1:], seq)
	for i := 5; i < len(b); i++ {
		b[i] = byte(seq) ^ byte(i) ^ j
	}
	return b
}

// echoHost answers every message with the same content, until ctx ends,
// and counts what it received per sender and sequence.
func echoHost(ctx context.Context, t *testing.T, host *relay.Client) (*sync.Map, *sync.WaitGroup) {
	var seen sync.Map // string(from)+seq → count
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			m, err := host.Receive(ctx)
			if err != nil {
				return
			}
			key := fmt.Sprintf("%x/%x", m.From, m.Content[:5])
			n, _ := seen.LoadOrStore(key, new(int))
			*n.(*int)++
			if err := host.Send(m.From, m.Content); err != nil {
				t.Errorf("host send: %v", err)
				return
			}
		}
	}()
	return &seen, &wg
}

// exchange sends n messages from joiner j to the host (at most window
// outstanding) and checks every echo: none lost, duplicated or altered. It
// returns what went wrong, since it runs on goroutines of its own.
func exchange(c *relay.Client, host wirerelay.AllocationID, j byte, first, n uint32, window int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next, got := first, uint32(0)
	outstanding := 0
	received := make(map[uint32]bool, n)
	for got < n {
		for outstanding < window && next < first+n {
			if err := c.Send(host, payload(j, next)); err != nil {
				return err
			}
			next++
			outstanding++
		}
		m, err := c.Receive(ctx)
		if err != nil {
			return fmt.Errorf("joiner %d: after %d of %d echoes: %w", j, got, n, err)
		}
		if m.From != host {
			return fmt.Errorf("echo from %x, want the host %x", m.From, host)
		}
		seq := binary.BigEndian.Uint32(m.Content[1:])
		if m.Content[0] != j || seq < first || seq >= first+n || !bytes.Equal(m.Content, payload(j, seq)) {
			return fmt.Errorf("joiner %d: altered or foreign message %x", j, m.Content)
		}
		if received[seq] {
			return fmt.Errorf("joiner %d: duplicate echo of %d", j, seq)
		}
		received[seq] = true
		got++
		outstanding--
	}
	return nil
}

func TestRelayHostAndJoiners(t *testing.T) {
	env := startRelay(t, "")
	ctx := context.Background()
	// Over HTTP: the host's allocation and a join code; each joiner trades
	// the code for its own allocation and the host's connection data.
	hostAlloc, err := env.api.Allocate(ctx, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	code, err := env.api.JoinCode(ctx, hostAlloc.AllocationID)
	if err != nil {
		t.Fatal(err)
	}
	host := env.dialAPI(t, hostAlloc)
	hostID, _ := relay.ParseAllocationID(hostAlloc.AllocationID)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, hostDone := echoHost(hctx, t, host)

	join := func() (*relay.Client, error) {
		a, err := env.api.Join(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		c := env.dialAPI(t, a)
		from, err := connectTo(t, c, a.HostConnectionData)
		if err == nil && from != hostID {
			t.Fatalf("ACCEPTED.From: got %x, want the host's ID %x", from, hostID)
		}
		return c, err
	}
	joiners := make([]*relay.Client, 2)
	for i := range joiners {
		if joiners[i], err = join(); err != nil {
			t.Fatal(err)
		}
	}
	// A third joiner is past the host's 2 connections.
	if _, err := join(); !errors.Is(err, relay.ErrRejected) {
		t.Fatalf("third joiner: got %v, want REJECTED", err)
	}

	const n = 10_000
	var wg sync.WaitGroup
	errs := make(chan error, len(joiners))
	for i, c := range joiners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- exchange(c, hostID, byte(i), 0, n, 16)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	hostDone.Wait()
	count := 0
	seen.Range(func(_, v any) bool {
		if *v.(*int) != 1 {
			t.Errorf("the host received a message %d times", *v.(*int))
		}
		count++
		return true
	})
	if count != 2*n {
		t.Fatalf("the host received %d distinct messages, want %d", count, 2*n)
	}
	for i, c := range joiners {
		if c.Rebinds() != 0 {
			t.Fatalf("joiner %d had to re-bind %d times", i, c.Rebinds())
		}
	}
	t.Logf("2 joiners × %d messages each way through the relay: none lost, duplicated or altered", n)
}

func TestRelayReloadKeepsSessions(t *testing.T) {
	env := startRelay(t, "")
	host, hostAlloc, hostData := env.dial(t, 1)
	joiner, _, _ := env.dial(t, 1)
	if _, err := connectTo(t, joiner, hostData); err != nil {
		t.Fatal(err)
	}
	// The joiner streams numbered messages, each stamped with its send
	// time, through the relay while the configuration is reloaded; the host
	// records what arrives.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	arrived := map[uint32]bool{}
	go func() {
		for {
			m, err := host.Receive(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			arrived[binary.BigEndian.Uint32(m.Content)] = true
			mu.Unlock()
		}
	}()
	start := time.Now()
	sentAt := []time.Duration{}
	stop := make(chan struct{})
	streamed := make(chan error, 1)
	var sent atomic.Int64
	go func() {
		for seq := uint32(0); ; seq++ {
			select {
			case <-stop:
				streamed <- nil
				return
			default:
			}
			msg := binary.BigEndian.AppendUint32(nil, seq)
			sentAt = append(sentAt, time.Since(start))
			if err := joiner.Send(hostAlloc.ID, msg); err != nil {
				streamed <- err
				return
			}
			sent.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	// Traffic before the reload, a configuration reload, and traffic after
	// it: counted in messages, not time, so a loaded machine that sends
	// slowly still sends enough on each side.
	testutil.WaitFor(t, "200 messages before the reload", func() bool { return sent.Load() >= 200 })
	env.caddy.Load(t, env.cfg)
	reloaded := time.Since(start)
	atReload := sent.Load()
	testutil.WaitFor(t, "300 messages after the reload", func() bool { return sent.Load() >= atReload+300 })
	close(stop)
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
	// Wait until nothing more arrives.
	last := -1
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n == last {
			break
		}
		last = n
	}
	mu.Lock()
	defer mu.Unlock()
	after, lostAfter, lostDuring := 0, 0, 0
	for seq, at := range sentAt {
		switch {
		case at >= reloaded:
			after++
			if !arrived[uint32(seq)] {
				lostAfter++
			}
		case !arrived[uint32(seq)]:
			lostDuring++
		}
	}
	if after < 100 || lostAfter != 0 {
		t.Fatalf("%d messages sent after the reload completed, %d lost; want many sent and none lost", after, lostAfter)
	}
	if n := env.caddy.MustMetric(t, "gamegate_relay_bindings"); n != 2 {
		t.Fatalf("bindings after the reload: got %v, want 2", n)
	}
	if joiner.Rebinds() != 0 || host.Rebinds() != 0 {
		t.Fatalf("re-binds across the reload: joiner %d host %d, want none", joiner.Rebinds(), host.Rebinds())
	}
	t.Logf("%d messages streamed across a reload: %d sent after it completed, none of those lost (%d lost while it ran)", len(sentAt), after, lostDuring)
}

// rawBind is a shipped-layout BIND (295 bytes, little-endian nonce).
func rawBind(t *testing.T, a *relay.Allocation, data []byte, nonce uint16) []byte {
	t.Helper()
	m := wirerelay.Bind{Nonce: nonce, ConnectionData: data}
	if err := m.Sign(a.Key[:], wirerelay.Options{Padded: true}); err != nil {
		t.Fatal(err)
	}
	b, err := m.AppendShipped(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 295 || binary.LittleEndian.Uint16(b[5:7]) != nonce {
		t.Fatalf("BIND of %d bytes with nonce bytes %x: want 295 bytes, little-endian nonce", len(b), b[5:7])
	}
	return b
}

var bindReceived = []byte{0xDA, 0x72, 0x00, 0x01}

// firstReply sends each datagram in order and returns the first reply.
func firstReply(t *testing.T, c *testutil.UDPClient, datagrams ...[]byte) []byte {
	t.Helper()
	for _, d := range datagrams {
		c.Send(d)
	}
	b, ok := c.Recv(replyTimeout)
	if !ok {
		t.Fatal("no reply")
	}
	return b
}

func TestRelayBindRules(t *testing.T) {
	env := startRelay(t, "")
	a, data := env.allocation(t, 1)
	first := testutil.DialUDP(t, "127.0.0.1:0", env.addr)

	// A BIND with a wrong HMAC gets silence: the reply that comes is the
	// valid BIND's.
	bad := rawBind(t, a, data, 3)
	bad[len(bad)-1] ^= 0xFF
	if got := firstReply(t, first, bad, rawBind(t, a, data, 3)); !bytes.Equal(got, bindReceived) {
		t.Fatalf("got %x, want BIND_RECEIVED for the valid BIND only", got)
	}
	if got, ok := first.Recv(200 * time.Millisecond); ok {
		t.Fatalf("a second reply %x: the bad BIND was answered", got)
	}

	// The same BIND replayed from a new address (old nonce): silence; the
	// binding stays.
	moved := testutil.DialUDP(t, "127.0.0.2:0", env.addr)
	ping, _ := (&wirerelay.Ping{AllocationID: a.ID, Number: 1}).AppendTo(nil)
	got := firstReply(t, moved, rawBind(t, a, data, 3), ping)
	var e wirerelay.Error
	if e.Decode(got) != nil || e.Code != wirerelay.CodeClientPlayerMismatch {
		t.Fatalf("after a replayed BIND from a new address: got %x, want silence then ERROR 3 for the PING", got)
	}
	// With a higher nonce the binding moves to the new address.
	if got := firstReply(t, moved, rawBind(t, a, data, 4)); !bytes.Equal(got, bindReceived) {
		t.Fatalf("higher nonce from a new address: got %x, want BIND_RECEIVED", got)
	}
	if got := firstReply(t, moved, ping); !bytes.Equal(got, ping) {
		t.Fatalf("PING from the new address: got %x, want it echoed", got)
	}
	if got := firstReply(t, first, ping); e.Decode(got) != nil || e.Code != wirerelay.CodeClientPlayerMismatch {
		t.Fatalf("PING from the old address: got %x, want ERROR 3", got)
	}
}

func TestRelayTimeout(t *testing.T) {
	env := startRelay(t, "idle_timeout 300ms\n\t\t\t\t\talone_timeout 300ms")
	a, data := env.allocation(t, 1)
	c := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
	if got := firstReply(t, c, rawBind(t, a, data, 0)); !bytes.Equal(got, bindReceived) {
		t.Fatalf("BIND: got %x", got)
	}
	ping, _ := (&wirerelay.Ping{AllocationID: a.ID}).AppendTo(nil)
	if got := firstReply(t, c, ping); !bytes.Equal(got, ping) {
		t.Fatalf("PING: got %x", got)
	}
	time.Sleep(500 * time.Millisecond) // silent past the timeout
	var e wirerelay.Error
	if got := firstReply(t, c, ping); e.Decode(got) != nil || e.Code != wirerelay.CodeTimeout || e.AllocationID != a.ID {
		t.Fatalf("after the timeout: got %x, want ERROR 1", got)
	}
}

func TestRelayNoAmplificationFromUnboundSources(t *testing.T) {
	env := startRelay(t, "max_bindings 8")
	// Twelve clients with valid allocations try to bind: the first eight
	// get BIND_RECEIVED, the rest silence.
	bound := 0
	for i := range 12 {
		a, data := env.allocation(t, 1)
		c := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
		c.Send(rawBind(t, a, data, 0))
		b, ok := c.Recv(500 * time.Millisecond)
		switch {
		case ok && bytes.Equal(b, bindReceived):
			bound++
		case ok:
			t.Fatalf("bind %d: got %x, want BIND_RECEIVED or silence", i, b)
		}
	}
	if bound != 8 || env.caddy.MustMetric(t, "gamegate_relay_bindings") != 8 {
		t.Fatalf("bound %d of 12 with max_bindings 8 (gauge %v), want 8", bound, env.caddy.MustMetric(t, "gamegate_relay_bindings"))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	sources := make([]*testutil.UDPClient, 32)
	for i := range sources {
		sources[i] = testutil.DialUDP(t, fmt.Sprintf("127.0.%d.%d:0", 10+i/200, 1+i%200), env.addr)
	}
	sizes := make([]map[int]bool, len(sources)) // what each source sent
	for i := range sizes {
		sizes[i] = map[int]bool{}
	}
	for k := range 5000 {
		i := k % len(sources)
		var d []byte
		switch k % 4 {
		case 0:
			d = []byte{0xDA, 0x72, 0x00, byte(rng.IntN(13))}
		case 1:
			d = make([]byte, 1+rng.IntN(300))
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
		case 2: // well-formed messages for allocations nobody bound
			var id wirerelay.AllocationID
			id[0] = byte(k)
			if k%8 == 2 {
				d, _ = (&wirerelay.Ping{AllocationID: id}).AppendTo(nil)
			} else {
				d, _ = (&wirerelay.Relay{From: id, To: id, Content: []byte("x")}).AppendTo(nil)
			}
		default: // BINDs that do not authenticate
			a, data := env.allocation(t, 1)
			d = rawBind(t, a, data, 0)
			d[100] ^= 1
		}
		sources[i].Send(d)
		sizes[i][len(d)] = true
	}
	// Collect every reply (all sources at once): each must be an ERROR no
	// larger than some datagram its source sent.
	got := make([][][]byte, len(sources))
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, ok := s.Recv(300 * time.Millisecond)
				if !ok {
					return
				}
				got[i] = append(got[i], b)
			}
		}()
	}
	wg.Wait()
	replies := 0
	for i, bs := range got {
		for _, b := range bs {
			replies++
			larger := false
			for n := range sizes[i] {
				if n >= len(b) {
					larger = true
					break
				}
			}
			if !larger {
				t.Fatalf("source %d got %d bytes, more than anything it sent", i, len(b))
			}
			var e wirerelay.Error
			if e.Decode(b) != nil {
				t.Fatalf("source %d got %x, want only ERROR messages", i, b)
			}
		}
	}
	if n := env.caddy.MustMetric(t, "gamegate_relay_bindings"); n != 8 {
		t.Fatalf("bindings after the flood: got %v, want the 8 bound before it", n)
	}
	t.Logf("8 of 12 valid BINDs bound (max_bindings 8); then 5000 datagrams from 32 unbound sources: %d replies, none larger than a datagram the source sent; 8 bindings after", replies)
}

// relay-check's flow against a real Caddy: allocate, join code, join,
// bind, connect, echo.
func TestRelayCheck(t *testing.T) {
	env := startRelay(t, "")
	res, err := relay.Check(context.Background(), relay.CheckConfig{API: env.api, Messages: 200, Size: 100, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 200 || res.Received != 200 || res.P50 <= 0 || res.P99 < res.P50 || res.Relay != env.addr || len(res.JoinCode) != 6 {
		t.Fatalf("relay check: got %+v", res)
	}
	t.Logf("relay check: %d round trips, p50 %.3fms p99 %.3fms", res.Received, res.P50ms, res.P99ms)
}

// A loss is reported as soon as it is certain, with its count: relay-check
// once waited out its whole timeout after the first loss and printed the
// loss rounded to "0.0%". Every message of a check through a relay that
// forwards none of them is lost one loss timeout after it was sent, long
// before the check's timeout; and with a host that echoes all but every
// tenth message, the stream goes on past each loss and counts exactly the
// ones dropped.
func TestRelayCheckReportsLossPromptly(t *testing.T) {
	env := startRelay(t, "max_content 100")
	const timeout, lossTimeout = 30 * time.Second, 300 * time.Millisecond
	start := time.Now()
	res, err := relay.Check(context.Background(), relay.CheckConfig{API: env.api, Messages: 40, Size: 200, Timeout: timeout, LossTimeout: lossTimeout})
	if err != nil {
		t.Fatal(err)
	}
	checkTook := time.Since(start)
	if res.Sent != 40 || res.Received != 0 || res.Lost != 40 {
		t.Fatalf("check of 200-byte messages through a relay forwarding 100: sent %d, received %d, lost %d; want 40, 0, 40", res.Sent, res.Received, res.Lost)
	}
	if checkTook > timeout/2 {
		t.Fatalf("the check took %v to find 40 messages lost with a loss timeout of %v; its timeout is %v", checkTook, lossTimeout, timeout)
	}

	host, hostAlloc, hostData := env.dial(t, 1)
	joiner, _, _ := env.dial(t, 1)
	if _, err := connectTo(t, joiner, hostData); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		for {
			m, err := host.Receive(ctx)
			if err != nil {
				return
			}
			if binary.BigEndian.Uint64(m.Content)%10 != 3 {
				_ = host.Send(m.From, m.Content)
			}
		}
	}()
	start = time.Now()
	echo, err := relay.Echo(ctx, joiner, hostAlloc.ID, relay.EchoConfig{Messages: 300, Size: 64, Window: 8, LossTimeout: lossTimeout})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if echo.Sent != 300 || echo.Received != 270 || echo.Lost != 30 || echo.Late != 0 {
		t.Fatalf("300 messages, every tenth not echoed: sent %d, received %d, lost %d, late %d; want 300, 270, 30, 0", echo.Sent, echo.Received, echo.Lost, echo.Late)
	}
	if took > timeout/2 {
		t.Fatalf("the stream took %v with 30 losses and a loss timeout of %v", took, lossTimeout)
	}
	t.Logf("all 40 lost through a relay that forwards none: reported in %v (timeout %v); 30 of 300 dropped by the host: %d received, %d lost, in %v",
		checkTook.Round(time.Millisecond), timeout, echo.Received, echo.Lost, took.Round(time.Millisecond))
}
