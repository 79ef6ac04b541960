package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// lockMachineWide waits (up to ten minutes) for an flock on the file name
// in os.TempDir() and holds it until the test ends: a reservation of
// something every test process on the machine shares (what names it in
// the failure), such as a protocol's fixed port. The kernel releases it
// if the process dies.
func lockMachineWide(t testing.TB, name, what string) {
	t.Helper()
	path := filepath.Join(os.TempDir(), name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o666) // flock needs no write access
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			t.Fatalf("locking %s: %v", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("another test process held %s (%s) for ten minutes", path, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}

// BedrockDefaultPort is Minecraft Bedrock's default port, 19132, which a
// test binds on loopback to show that an address without a port reaches
// it. FreeTCPAddr and FreeUDPAddr never hand it out.
const BedrockDefaultPort = 19132

// LockBedrockDefaultPort waits (up to ten minutes) until no other test
// process on this machine uses BedrockDefaultPort, and reserves it for this
// test until it ends (see lockMachineWide).
func LockBedrockDefaultPort(t testing.TB) {
	t.Helper()
	lockMachineWide(t, "gamegate-bedrock-19132.lock", "Bedrock's default port 19132")
}
