//go:build !linux

package benchutil

import "os/exec"

// DieWithParent returns cmd: only Linux has a parent-death signal.
func DieWithParent(cmd *exec.Cmd) *exec.Cmd { return cmd }
