//go:build unix

package testutil

import (
	"os"
	"syscall"
)

// lockExclusive takes f's flock without waiting; the kernel releases it
// when the process exits.
func lockExclusive(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
