//go:build unix

package testenv

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group, so that the
// server and anything it spawns can be signalled together.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to cmd's process
// group. Errors (the group is gone) are ignored.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// With Setpgid the group id is the leader's pid.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
