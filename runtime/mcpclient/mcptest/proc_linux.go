package mcptest

import "syscall"

// sysProcAttr kills the server with the test binary, even when the binary
// dies before its cleanups run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
