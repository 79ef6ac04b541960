package tests

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// TestRelayReloadLosesNothing streams relay messages through the gamegate
// app (a joiner's messages, echoed by its host) while the configuration is
// reloaded, 20 times: not one message may be lost, and no reply may fail
// to send. A reload once lost messages in 2 of 3 tries: each configuration
// opened sockets of its own beside the old ones and closed the old ones
// with the datagrams queued in them, and the old readers' replies went to
// closed sockets.
func TestRelayReloadLosesNothing(t *testing.T) {
	env := startUDPApp(t, "")
	_, joiner, hostAlloc := env.echoingPair(t)
	relayed := func() float64 {
		return env.caddy.MustMetric(t, `gamegate_relay_datagrams_total{outcome="relayed"}`)
	}
	writeFailed := func() float64 {
		return env.caddy.MustMetric(t, `gamegate_udp_dropped_total{listener="`+env.addr+`",reason="write_failed"}`)
	}
	failedBefore := writeFailed()
	const tries = 20
	var sent, lost, lossyTries int
	for try := range tries {
		stop := echoStream(t, joiner, hostAlloc.ID)
		// Traffic before the reload, the reload, and traffic after it.
		before := relayed()
		testutil.WaitFor(t, "traffic before the reload", func() bool { return relayed() >= before+500 })
		env.caddy.Load(t, env.cfg)
		after := relayed()
		testutil.WaitFor(t, "traffic after the reload", func() bool { return relayed() >= after+500 })
		r := stop()
		sent += r.Sent
		lost += r.Lost
		if r.Lost > 0 {
			lossyTries++
			t.Logf("try %d: %d of %d messages lost", try, r.Lost, r.Sent)
		}
	}
	failed := writeFailed() - failedBefore
	if lost > 0 || failed > 0 {
		t.Fatalf("%d reloads under relay traffic: %d of %d messages lost, in %d tries; %v replies failed to send", tries, lost, sent, lossyTries, failed)
	}
	if n := env.caddy.MustMetric(t, "gamegate_relay_bindings"); n != 2 {
		t.Fatalf("bindings after %d reloads: got %v, want 2", tries, n)
	}
	t.Logf("%d reloads under relay traffic: %d messages, none lost, no reply failed to send", tries, sent)
}

// A configuration that fails to start, after the gamegate app attached it
// to the running one's sockets (its second address is another process's),
// gives them back: the running configuration serves on, and relay traffic
// through the failed reload loses nothing.
func TestRelayFailedReloadLosesNothing(t *testing.T) {
	env := startUDPApp(t, "")
	_, joiner, hostAlloc := env.echoingPair(t)
	taken, err := net.ListenPacket("udp", testutil.FreeUDPAddr(t)) // without SO_REUSEPORT: another process's
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	// The second udp block, after the relay's: the relay's address is
	// attached when the start fails.
	failing := strings.Replace(env.cfg, "\t}\n}\nhttp://", "\t\tudp "+taken.LocalAddr().String()+" {\n\t\t\tqos\n\t\t}\n\t}\n}\nhttp://", 1)
	if failing == env.cfg {
		t.Fatal("the configuration has no gamegate block to add a udp block to")
	}
	relayed := func() float64 {
		return env.caddy.MustMetric(t, `gamegate_relay_datagrams_total{outcome="relayed"}`)
	}
	stop := echoStream(t, joiner, hostAlloc.ID)
	for i := range 5 {
		before := relayed()
		testutil.WaitFor(t, "traffic before the reload", func() bool { return relayed() >= before+500 })
		if err := env.caddy.LoadFailing(t, failing); !strings.Contains(err.Error(), "another process") {
			t.Fatalf("reload %d: %v, want the address in use by another process", i, err)
		}
	}
	after := relayed()
	testutil.WaitFor(t, "traffic after the failed reloads", func() bool { return relayed() >= after+500 })
	r := stop()
	if r.Lost > 0 {
		t.Fatalf("5 failed reloads under relay traffic: %d of %d messages lost", r.Lost, r.Sent)
	}
	t.Logf("5 failed reloads under relay traffic: %d messages, none lost", r.Sent)
}

// echoStream starts relay.Echo from joiner to host (which echoes), 32
// messages in flight, each lost if its echo takes 2 s; stop ends the
// sending and returns what the stream measured once the messages in
// flight are back or lost.
func echoStream(t *testing.T, joiner *relay.Client, host wirerelay.AllocationID) (stop func() *relay.EchoResult) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var res *relay.EchoResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = relay.Echo(ctx, joiner, host, relay.EchoConfig{Size: 64, Window: 32, LossTimeout: 2 * time.Second})
	}()
	return func() *relay.EchoResult {
		t.Helper()
		cancel()
		<-done
		if err != nil {
			t.Fatalf("relay traffic: %v", err)
		}
		return res
	}
}
