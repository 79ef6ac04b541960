//go:build linux

package benchutil

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the process cmd starts receive SIGKILL when the
// benchmark that started it dies, killed or timed out before its cleanup
// ran: a server of a baseline (the C server, coturn, pion/turn) or a load
// generator never stays behind, listening on loopback.
func DieWithParent(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}
