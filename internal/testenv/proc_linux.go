package testenv

import "syscall"

// setParentDeathSignal has the kernel kill the server when the test process
// dies without running its cleanups (a panic in another goroutine, a
// `go test -timeout` kill).
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
