package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v4"
)

// result is what one measurement found; bench/internal/relayload decodes
// it (its LoadResult): keep the two alike.
type result struct {
	RoundTrips int             `json:"round_trips"` // answered while sending
	Sent       int             `json:"sent"`
	Lost       int             `json:"lost"` // sent and never answered, late answers counted
	Elapsed    time.Duration   `json:"elapsed"`
	RTTs       []time.Duration `json:"rtts"`
}

// load measures one client pair through a TURN server: A keeps a window of
// messages in flight to B through A's allocation's channel, and B sends
// each straight back.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	server := fs.String("server", "", "the TURN server's UDP address")
	realm := fs.String("realm", "gamegate.bench", "realm")
	user := fs.String("user", "bench", "user name")
	pass := fs.String("pass", "bench", "password")
	hops := fs.Int("hops", 2, "2: both clients allocated; 1: B a plain UDP socket")
	window := fs.Int("window", 64, "messages in flight")
	size := fs.Int("size", 134, "bytes of data per message (ChannelData adds 4, and pads to 4)")
	d := fs.Duration("duration", 2*time.Second, "measuring time")
	warmup := fs.Duration("warmup", 300*time.Millisecond, "load before measuring (channel bindings complete meanwhile)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *server == "" || *hops < 1 || *hops > 2 || *window < 1 || *size < payloadHeader || *size > 1200 {
		return fmt.Errorf("want -server, -hops 1 or 2, a window and a size of %d to 1200", payloadHeader)
	}
	cfg := turn.ClientConfig{STUNServerAddr: *server, TURNServerAddr: *server, Username: *user, Password: *pass,
		Realm: *realm, LoggerFactory: quiet()}
	a, aRelay, err := allocate(cfg)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	defer a.Close()
	defer aRelay.Close()
	var b net.PacketConn // where B reads and answers
	if *hops == 2 {
		client, relay, err := allocate(cfg)
		if err != nil {
			return fmt.Errorf("B: %w", err)
		}
		defer client.Close()
		defer relay.Close()
		if err := client.CreatePermission(aRelay.LocalAddr()); err != nil {
			return fmt.Errorf("B's permission: %w", err)
		}
		b = relay
	} else {
		peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		defer peer.Close()
		_ = peer.SetReadBuffer(4 << 20)
		_ = peer.SetWriteBuffer(4 << 20)
		b = peer
	}
	if err := a.CreatePermission(b.LocalAddr()); err != nil {
		return fmt.Errorf("A's permission: %w", err)
	}
	stop := make(chan struct{})
	echoed := make(chan struct{})
	go func() {
		defer close(echoed)
		echo(b, stop)
	}()
	defer func() {
		close(stop)
		<-echoed
	}()
	if _, err := measure(aRelay, b.LocalAddr(), 0, *window, *size, *warmup, nil); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := io.WriteString(os.Stdout, "ready\n"); err != nil {
		return err
	}
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return fmt.Errorf("waiting for go: %q, %v", line, err)
	}
	res, err := measure(aRelay, b.LocalAddr(), 1, *window, *size, *d, func() {
		_, _ = io.WriteString(os.Stdout, "stopped\n")
	})
	if err != nil {
		return err
	}
	if res.RoundTrips == 0 {
		return errors.New("no message came back")
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}

// quiet logs pion's errors only.
func quiet() logging.LoggerFactory {
	f := logging.NewDefaultLoggerFactory()
	f.DefaultLogLevel = logging.LogLevelError
	return f
}

// allocate opens a loopback socket and a UDP allocation through it.
func allocate(cfg turn.ClientConfig) (*turn.Client, net.PacketConn, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	cfg.Conn = conn
	c, err := turn.NewClient(&cfg)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := c.Listen(); err != nil {
		c.Close()
		return nil, nil, err
	}
	relay, err := c.Allocate()
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, relay, nil
}

// echo sends every message B receives straight back where it came from,
// until stop closes.
func echo(b net.PacketConn, stop <-chan struct{}) {
	buf := make([]byte, 2048)
	for {
		select {
		case <-stop:
			return
		default:
		}
		_ = b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, from, err := b.ReadFrom(buf)
		if err != nil {
			continue
		}
		_, _ = b.WriteTo(buf[:n], from)
	}
}

// payloadHeader is what a message carries first: the run, a sequence and
// its send time.
const payloadHeader = 16

// measure runs A's closed loop through relay to peer for d, as
// bench/internal/relayload measures gamegate's relay: a window of messages
// in flight, one sent for each answer, the window sent again when nothing
// came for 200ms; late answers count as received, not as answered in time.
// stopped, if set, is called when A stops sending.
func measure(relay net.PacketConn, peer net.Addr, run uint32, window, size int, d time.Duration, stopped func()) (result, error) {
	var res result
	start := time.Now()
	out := make([]byte, size)
	binary.BigEndian.PutUint32(out, run)
	seq := uint32(0)
	send := func() error {
		binary.BigEndian.PutUint32(out[4:], seq)
		binary.BigEndian.PutUint64(out[8:], uint64(time.Since(start)))
		seq++
		if _, err := relay.WriteTo(out, peer); err != nil {
			return err
		}
		res.Sent++
		return nil
	}
	for range window {
		if err := send(); err != nil {
			return res, err
		}
	}
	buf := make([]byte, 2048)
	received := 0
	recv := func(timeout time.Duration) (time.Duration, bool) {
		_ = relay.SetReadDeadline(time.Now().Add(timeout))
		for {
			n, _, err := relay.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return 0, false
				}
				continue
			}
			if n < payloadHeader || binary.BigEndian.Uint32(buf) != run {
				continue
			}
			received++
			return time.Since(start) - time.Duration(binary.BigEndian.Uint64(buf[8:])), true
		}
	}
	stop := start.Add(d)
	for time.Now().Before(stop) {
		rtt, ok := recv(200 * time.Millisecond)
		if !ok {
			for range window { // the window is lost: send it again
				_ = send()
			}
			continue
		}
		res.RTTs = append(res.RTTs, rtt)
		res.RoundTrips++
		_ = send()
	}
	res.Elapsed = time.Since(start)
	if stopped != nil {
		stopped()
	}
	for received < res.Sent {
		if _, ok := recv(200 * time.Millisecond); !ok {
			break
		}
	}
	res.Lost = res.Sent - received
	return res, nil
}
