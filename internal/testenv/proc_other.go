//go:build !unix

package testenv

import "os/exec"

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills cmd's process (there is no gentler signal here).
func signalGroup(cmd *exec.Cmd, _ bool) {
	_ = cmd.Process.Kill()
}
