package query

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
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
