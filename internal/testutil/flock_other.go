//go:build !unix

package testutil

import "os"

// lockExclusive cannot lease a block here: the callers bind port 0.
func lockExclusive(*os.File) bool { return false }
