package query

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestNowUsesTheGivenClockElseTheSystems(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Now(func() time.Time { return at }); !got.Equal(at) {
		t.Errorf("with a clock: got %v, want %v", got, at)
	}
	before := time.Now()
	if got := Now(nil); got.Before(before) || got.After(time.Now()) {
		t.Errorf("without a clock: got %v, want the system's time (after %v)", got, before)
	}
}

// A read blocked under BoundDeadline returns once ctx is cancelled, long
// before the timeout.
func TestBoundDeadlineCancelUnblocksRead(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stop := BoundDeadline(ctx, conn, time.Hour)
	defer stop()
	read := make(chan error, 1)
	go func() {
		_, _, err := conn.ReadFrom(make([]byte, 16))
		read <- err
	}()
	cancel()
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: got %v, want a deadline error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked 10 s after ctx was cancelled (the timeout is an hour)")
	}
}

// A status is encoded in GameDig's shape: its field names, and players,
// bots and raw as a list, a list and an object even when a protocol left
// them nil.
func TestStatusJSONHasGameDigShape(t *testing.T) {
	st := &Status{Name: "arena", Players: []Player{{Name: "alice"}}}
	st.SetAddress("127.0.0.1:27016", 27015)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"arena","map":"","password":false,"numplayers":0,"maxplayers":0,"players":[{"name":"alice","raw":{}}],` +
		`"bots":[],"connect":"127.0.0.1:27015","queryPort":27016,"ping":0,"version":"","raw":{},"protocol":"","address":"127.0.0.1:27016"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestSetAddress(t *testing.T) {
	for _, c := range []struct {
		address   string
		gamePort  int
		connect   string
		queryPort int
	}{
		{"127.0.0.1:27015", 0, "127.0.0.1:27015", 27015},
		{"127.0.0.1:27016", 27015, "127.0.0.1:27015", 27016},
		{"[::1]:19132", 19133, "[::1]:19133", 19132},
		{"127.0.0.1:5556", 70000, "127.0.0.1:5556", 5556}, // not a port: ignored
		{"mc.example.com", 25565, "mc.example.com", 0},    // no port to replace
	} {
		var st Status
		st.SetAddress(c.address, c.gamePort)
		if st.Connect != c.connect || st.QueryPort != c.queryPort || st.Address != c.address {
			t.Errorf("SetAddress(%q, %d): connect %q, queryPort %d, address %q; want %q, %d", c.address, c.gamePort,
				st.Connect, st.QueryPort, st.Address, c.connect, c.queryPort)
		}
	}
}

// A port nothing listens on ends the exchange at once with ECONNREFUSED
// (the ICMP port unreachable on the connected socket), without waiting for
// the timeout or retrying; a silent one ends with ErrNoAnswer. Failure
// tells the two apart, and the client's message carries neither the
// address nor the operating system's words.
func TestUDPExchangeRefusedAndSilent(t *testing.T) {
	refused := testutil.FreeUDPAddr(t) // leased: nothing is bound there
	silent := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return nil }).String()
	for _, tc := range []struct {
		address string
		x       UDPExchange
		wantErr error
		want    ErrorType
		status  int
	}{
		{refused, UDPExchange{Timeout: time.Hour, Retries: 5}, syscall.ECONNREFUSED, TypeRefused, http.StatusBadGateway},
		{silent, UDPExchange{Timeout: 50 * time.Millisecond, Retries: 1}, ErrNoAnswer, TypeTimeout, http.StatusGatewayTimeout},
	} {
		raddr, err := net.ResolveUDPAddr("udp", tc.address)
		if err != nil {
			t.Fatal(err)
		}
		sends := 0
		err = tc.x.Run(context.Background(), raddr, func(a *Attempt) (func([]byte) (bool, error), error) {
			sends++
			if err := a.Send([]byte("ping")); err != nil {
				return nil, err
			}
			return func([]byte) (bool, error) { return false, nil }, nil
		})
		if !errors.Is(err, tc.wantErr) {
			t.Fatalf("%s: got %v, want %v", tc.address, err, tc.wantErr)
		}
		if tc.want == TypeRefused && sends != 1 {
			t.Fatalf("refused: %d attempts, want 1 (a refusal is not retried)", sends)
		}
		e := Failure(tc.address, err)
		if e.Kind() != tc.want || e.HTTPStatus != tc.status {
			t.Fatalf("%s: Failure gives %s %d, want %s %d", tc.address, e.Kind(), e.HTTPStatus, tc.want, tc.status)
		}
		_, port, _ := net.SplitHostPort(tc.address)
		if strings.Contains(e.Message, port) || strings.Contains(e.Message, "127.0.0.1") || strings.Contains(e.Message, "connection refused") {
			t.Fatalf("message %q carries the address or the OS text", e.Message)
		}
		if !strings.Contains(e.Detail.Error(), tc.address) {
			t.Fatalf("detail %q does not name the address", e.Detail)
		}
	}
}

func TestFailureTypes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ErrorType
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, TypeRefused},
		{&net.DNSError{Err: "no such host", Name: "x.invalid", Server: "127.0.0.53:53", IsNotFound: true}, TypeUnresolved},
		{&net.DNSError{Err: "i/o timeout", Name: "x.example", IsTimeout: true}, TypeTimeout},
		{context.DeadlineExceeded, TypeTimeout},
		{ErrNoAnswer, TypeTimeout},
		{io.ErrUnexpectedEOF, TypeBadAnswer},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, TypeUnreachable},
		{Errorf(http.StatusTooManyRequests, "slow down"), TypeLimited},
		{Errorf(http.StatusNotImplemented, "the game x needs the protocol y"), TypeUnsupported},
	} {
		if got := Failure("192.0.2.1:1", tc.err).Kind(); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.err, got, tc.want)
		}
	}
}

// An attempt told to end after a quiet spell asks accept with nil once no
// datagram came for that long: true ends it answered, long before its
// timeout; false waits on, and without more datagrams the attempt times
// out.
func TestUDPExchangeEndAfterQuiet(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		return [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	})
	raddr := net.UDPAddrFromAddrPort(addr)
	for _, complete := range []bool{true, false} {
		var got []string
		ends := 0
		x := UDPExchange{Timeout: 500 * time.Millisecond, Retries: -1}
		if complete {
			x.Timeout = 30 * time.Second // ends by the quiet spell, or by ctx and fails
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := x.Run(ctx, raddr, func(a *Attempt) (func([]byte) (bool, error), error) {
			a.EndAfterQuiet(20 * time.Millisecond)
			return func(d []byte) (bool, error) {
				if d == nil {
					ends++
					return complete, nil
				}
				got = append(got, string(d))
				return false, nil
			}, a.Send([]byte("q"))
		})
		cancel()
		if complete && (err != nil || strings.Join(got, "") != "abc" || ends != 1) {
			t.Errorf("complete: got %v, datagrams %q, %d ends; want nil, abc, 1", err, got, ends)
		}
		if !complete && (!errors.Is(err, ErrNoAnswer) || ends != 1) {
			t.Errorf("incomplete: got %v, %d ends; want no answer, 1 end", err, ends)
		}
	}
}
